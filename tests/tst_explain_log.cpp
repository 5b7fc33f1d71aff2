// Engine logs: what is read from realistic vLLM (V1 and V0) and SGLang startup logs, the
// model-name mapping, the term-by-term explanation, and `kvscope-cli explain-log`.
#include "cli_runner.h"
#include "core/engines/explain_log.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>
#include <cmath>

using namespace kvscope;

namespace {

const QString kLogs = QStringLiteral(KVSCOPE_TEST_DATA_DIR "/logs/");
constexpr double kGiB = 1073741824.0;

const ExplainTerm* findTerm(const LogExplanation& e, const std::string& key) {
    for (const auto& t : e.terms)
        if (t.key == key)
            return &t;
    return nullptr;
}

} // namespace

class TestExplainLog : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void parse_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("engine");
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("tp");
        QTest::addColumn<double>("util");
        QTest::addColumn<double>("weightsGiB");
        QTest::addColumn<double>("poolGiB");
        QTest::addColumn<int>("tokens");
        QTest::addColumn<int>("context");
        QTest::newRow("vllm v1 llama3-70b tp8") << "vllm_llama3_70b_tp8_h100.log"
                                                << "vllm"
                                                << "meta-llama/Meta-Llama-3-70B-Instruct" << 8
                                                << 0.9 << 16.4341 << 49.26 << 1291312 << 8192;
        QTest::newRow("vllm v0 llama3-8b fp8 kv")
            << "vllm_v0_llama3_8b_fp8kv_h100.log"
            << "vllm"
            << "meta-llama/Meta-Llama-3-8B-Instruct" << 1 << 0.9 << 14.9888 << 55.0 << 0 << 8192;
        QTest::newRow("sglang llama3-8b tp1") << "sglang_llama3_8b_tp1_h100.log"
                                              << "sglang"
                                              << "meta-llama/Meta-Llama-3-8B-Instruct" << 1 << 0.88
                                              << 14.99 << 54.16 << 443681 << 8192;
    }
    void parse() {
        QFETCH(QString, file);
        QFETCH(QString, engine);
        QFETCH(QString, model);
        QFETCH(int, tp);
        QFETCH(double, util);
        QFETCH(double, weightsGiB);
        QFETCH(double, poolGiB);
        QFETCH(int, tokens);
        QFETCH(int, context);
        auto log = loadEngineLog((kLogs + file).toStdString());
        QVERIFY2(log.ok(), log.ok() ? "" : log.error().message().c_str());
        QCOMPARE(QString::fromStdString(toString(log->engine)), engine);
        QCOMPARE(QString::fromStdString(log->model), model);
        QCOMPARE(log->tp.value_or(-1), std::int64_t(tp));
        QVERIFY(log->memUtil && std::fabs(*log->memUtil - util) < 1e-9);
        QVERIFY(log->weightBytes &&
                std::fabs(double(*log->weightBytes) / kGiB - weightsGiB) < 1e-4);
        const std::optional<std::int64_t> pool =
            log->availableKvBytes ? log->availableKvBytes
                                  : std::optional<std::int64_t>(log->kSizeBytes.value_or(0) +
                                                                log->vSizeBytes.value_or(0));
        QVERIFY(pool && std::fabs(double(*pool) / kGiB - poolGiB) < 0.011);
        if (tokens > 0)
            QCOMPARE(log->kvTokens.value_or(-1), std::int64_t(tokens));
        QCOMPARE(log->maxModelLen.value_or(log->concurrencyTokens.value_or(-1)),
                 std::int64_t(context));
        QVERIFY(!log->readLines.empty());
    }

    void vllmDetails() {
        auto v1 =
            loadEngineLog((kLogs + QStringLiteral("vllm_llama3_70b_tp8_h100.log")).toStdString());
        QVERIFY(v1.ok());
        QCOMPARE(v1->maxNumBatchedTokens.value_or(-1), std::int64_t(8192));
        QCOMPARE(v1->concurrencyTokens.value_or(-1), std::int64_t(8192));
        QVERIFY(v1->concurrency && std::fabs(*v1->concurrency - 157.63) < 1e-9);
        QCOMPARE(QString::fromStdString(v1->kvCacheDtype.value_or("")), QStringLiteral("auto"));
        auto v0 = loadEngineLog(
            (kLogs + QStringLiteral("vllm_v0_llama3_8b_fp8kv_h100.log")).toStdString());
        QVERIFY(v0.ok());
        QCOMPARE(QString::fromStdString(v0->kvCacheDtype.value_or("")), QStringLiteral("fp8"));
        QCOMPARE(v0->numGpuBlocks.value_or(-1), std::int64_t(56320));
        QVERIFY(v0->totalGpuMemoryBytes &&
                std::fabs(double(*v0->totalGpuMemoryBytes) / kGiB - 79.19) < 1e-6);
        QVERIFY(v0->nonTorchBytes && v0->activationPeakBytes);
    }

    // The real fixture logs' formats: vLLM 0.19's DEBUG profiling lines and CUDA-graph lines,
    // 0.10.1.1's wrapped lines, the version in the engine line.
    void realFormats_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("version");
        QTest::addColumn<double>("util");
        QTest::addColumn<double>("activationGiB"); // 0: not logged
        QTest::addColumn<double>("nonTorchGiB");
        QTest::addColumn<double>("graphEstimateGiB");
        QTest::addColumn<int>("tokens");
        QTest::newRow("0.19 qwen2.5 tp1")
            << "vllm-0.19.0-h100/qwen-qwen2-5-7b-instruct--h100-80gb--tp1pp1dp1--8192.log"
            << "0.19.0" << 0.95 << 2.21 << 0.24 << 0.61 << 1096000;
        QTest::newRow("0.19 gpt-oss default util")
            << "vllm-0.19.0-h100/openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192.log"
            << "0.19.0" << 0.9 << 2.87 << 2.07 << 1.09 << 2591776;
        QTest::newRow("0.10.1.1 wrapped at 136/147 columns")
            << "vllm-0.10.1.1-a100/vllm-7B-1gpuA10080GB-0.5GRAM.log"
            << "0.10.1" << 0.5 << 0.0 << 0.0 << 0.0 << 464848;
    }
    void realFormats() {
        QFETCH(QString, file);
        QFETCH(QString, version);
        QFETCH(double, util);
        QFETCH(double, activationGiB);
        QFETCH(double, nonTorchGiB);
        QFETCH(double, graphEstimateGiB);
        QFETCH(int, tokens);
        auto log = loadEngineLog(KVSCOPE_TEST_DATA_DIR "/engine-logs/" + file.toStdString());
        QVERIFY2(log.ok(), log.ok() ? "" : log.error().message().c_str());
        QVERIFY(log->version);
        QCOMPARE(QString::fromStdString(log->version->text()), version);
        QVERIFY(log->memUtil && std::fabs(*log->memUtil - util) < 1e-9);
        QCOMPARE(log->kvTokens.value_or(-1), std::int64_t(tokens));
        auto near = [](const std::optional<std::int64_t>& v, double gib) {
            return gib == 0 ? !v : (v && std::fabs(double(*v) / kGiB - gib) < 0.006);
        };
        QVERIFY(near(log->activationPeakBytes, activationGiB));
        QVERIFY(near(log->nonTorchBytes, nonTorchGiB));
        QVERIFY(near(log->cudaGraphEstimateBytes, graphEstimateGiB));
        QVERIFY(log->model.find('\n') == std::string::npos);
        QVERIFY(!log->refusal || log->availableKvBytes);
    }

    void modelNames_data() {
        QTest::addColumn<QString>("logged");
        QTest::addColumn<QString>("preset");
        QTest::newRow("llama3-70b instruct") << "meta-llama/Meta-Llama-3-70B-Instruct"
                                             << "llama-3-70b";
        QTest::newRow("llama3-8b") << "NousResearch/Meta-Llama-3-8B"
                                   << "llama-3-8b";
        QTest::newRow("deepseek-v3 dated revision") << "deepseek-ai/DeepSeek-V3-0324"
                                                    << "deepseek-v3";
        QTest::newRow("llama-3.1-405b fp8") << "meta-llama/Llama-3.1-405B-Instruct-FP8"
                                            << "llama-3.1-405b";
        QTest::newRow("hf cache snapshot path")
            << "/root/.cache/huggingface/hub/models--Qwen--Qwen3-32B/snapshots/"
               "9216db5781bf21249d130ec9da846c4624c16137"
            << "qwen3-32b";
        QTest::newRow("llama-2-7b chat") << "meta-llama/Llama-2-7b-chat-hf"
                                         << "llama-2-7b";
    }
    void modelNames() {
        QFETCH(QString, logged);
        QFETCH(QString, preset);
        auto m = matchModelName(logged.toStdString());
        QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
        QCOMPARE(QString::fromStdString(m.value()), preset);
    }

    void unknownModelNames_data() {
        QTest::addColumn<QString>("logged");
        QTest::newRow("llama-2-70b is not llama-2-7b") << "meta-llama/Llama-2-70b-hf";
        QTest::newRow("unrelated") << "acme/TotallyNewModel-13B";
    }
    void unknownModelNames() {
        QFETCH(QString, logged);
        auto m = matchModelName(logged.toStdString());
        QVERIFY(!m.ok());
        QCOMPARE(QString::fromStdString(m.error().field), QStringLiteral("model"));
    }

    void explain_data() {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("preset");
        // Relative gap kvscope vs the log: vLLM's profiled activations and non-torch memory are
        // estimates in core; SGLang's pool is read from the log's own free-memory figures.
        QTest::addColumn<double>("tokenTolerance");
        QTest::newRow("vllm v1 llama3-70b tp8") << "vllm_llama3_70b_tp8_h100.log"
                                                << "llama-3-70b" << 0.10;
        QTest::newRow("vllm v0 llama3-8b fp8") << "vllm_v0_llama3_8b_fp8kv_h100.log"
                                               << "llama-3-8b" << 0.10;
        QTest::newRow("sglang llama3-8b") << "sglang_llama3_8b_tp1_h100.log"
                                          << "llama-3-8b" << 0.01;
    }
    void explain() {
        QFETCH(QString, file);
        QFETCH(QString, preset);
        QFETCH(double, tokenTolerance);
        auto log = loadEngineLog((kLogs + file).toStdString());
        QVERIFY(log.ok());
        auto e = explainEngineLog(log.value());
        QVERIFY2(e.ok(), e.ok() ? "" : e.error().message().c_str());
        QCOMPARE(QString::fromStdString(e->modelRef), preset);
        QCOMPARE(QString::fromStdString(e->scenario.gpu.id), QStringLiteral("h100-sxm"));
        for (const char* key : {"weights", "pool", "cell", "tokens"})
            QVERIFY2(findTerm(e.value(), key), key);
        const ExplainTerm* tokens = findTerm(e.value(), "tokens");
        QVERIFY(tokens->logged);
        QVERIFY2(std::fabs(tokens->predicted - *tokens->logged) <= tokenTolerance * *tokens->logged,
                 e->summary.c_str());
        // With the engine's own pool, kvscope's cell and paging give the logged tokens exactly:
        // the whole remaining gap is memory accounting, not the cell.
        const ExplainTerm* fromLogged = findTerm(e.value(), "tokens_from_logged_pool");
        QVERIFY(fromLogged && fromLogged->logged);
        QCOMPARE(std::llround(fromLogged->predicted), std::llround(*fromLogged->logged));
        const ExplainTerm* cell = findTerm(e.value(), "cell");
        QVERIFY(cell->logged);
        QVERIFY(std::fabs(cell->predicted - *cell->logged) < 0.01 * cell->predicted);
        QVERIFY(!e->summary.empty());
        QVERIFY(explanationText(e.value()).find("weights per rank") != std::string::npos);
    }

    void explicitGpuOverrides() {
        auto log =
            loadEngineLog((kLogs + QStringLiteral("sglang_llama3_8b_tp1_h100.log")).toStdString());
        QVERIFY(log.ok());
        ExplainOptions opt;
        opt.gpu = "a100-80gb";
        auto e = explainEngineLog(log.value(), opt);
        QVERIFY(e.ok());
        QCOMPARE(QString::fromStdString(e->scenario.gpu.id), QStringLiteral("a100-80gb"));
        opt.gpu = "no-such-gpu";
        QVERIFY(!explainEngineLog(log.value(), opt).ok());
    }

    void badLogs_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("field");
        QTest::newRow("empty") << ""
                               << "log";
        QTest::newRow("not an engine log") << "hello\nworld\n"
                                           << "log";
        QTest::newRow("vllm lines without a model")
            << "INFO 06-12 09:43:13 [kv_cache_utils.py:715] GPU KV cache size: 1,291,312 tokens\n"
            << "model";
        QTest::newRow("both engines")
            << "INFO x GPU KV cache size: 10 tokens\n[TP0] KV Cache is allocated. #tokens: 10, K "
               "size: 1 GB, V size: 1 GB\n"
            << "log";
    }
    void badLogs() {
        QFETCH(QString, text);
        QFETCH(QString, field);
        auto log = parseEngineLog(text.toStdString());
        QVERIFY(!log.ok());
        QCOMPARE(QString::fromStdString(log.error().field), field);
    }

    void hugeLineIsFine() {
        std::string text = "INFO [core.py:70] Initializing a V1 LLM engine (v0.9.1) with config: "
                           "model='meta-llama/Meta-Llama-3-8B', tensor_parallel_size=2, " +
                           std::string(2'000'000, 'x') + "\nGPU KV cache size: 100 tokens\n";
        auto log = parseEngineLog(text);
        QVERIFY(log.ok());
        QCOMPARE(log->tp.value_or(0), std::int64_t(2));
    }

    void cli_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("needle");
        QTest::newRow("vllm text")
            << QStringList{QStringLiteral("explain-log"),
                           kLogs + QStringLiteral("vllm_llama3_70b_tp8_h100.log")}
            << 0 << "GPU KV cache size";
        QTest::newRow("sglang json")
            << QStringList{QStringLiteral("explain-log"),
                           kLogs + QStringLiteral("sglang_llama3_8b_tp1_h100.log"),
                           QStringLiteral("--json")}
            << 0 << "\"terms\"";
        QTest::newRow("not a log") << QStringList{QStringLiteral("explain-log"),
                                                  kLogs + QStringLiteral("not_an_engine.log")}
                                   << 2 << "no vLLM or SGLang";
        QTest::newRow("missing file")
            << QStringList{QStringLiteral("explain-log"), kLogs + QStringLiteral("nope.log")} << 2
            << "nope.log";
        QTest::newRow("no file") << QStringList{QStringLiteral("explain-log")} << 2 << "FILE";
        QTest::newRow("unknown model override")
            << QStringList{QStringLiteral("explain-log"),
                           kLogs + QStringLiteral("vllm_llama3_70b_tp8_h100.log"),
                           QStringLiteral("--model"), QStringLiteral("no-such-model")}
            << 2 << "model";
    }
    void cli() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, needle);
        const CliRun run = runCli(args);
        const QString& out = run.out;
        QVERIFY(run.finished);
        QCOMPARE(run.exitCode, exitCode);
        if (exitCode == 0) {
            QVERIFY2(out.contains(needle), qPrintable(out));
            if (args.contains(QStringLiteral("--json")))
                QVERIFY(QJsonDocument::fromJson(out.toUtf8())
                            .object()[QStringLiteral("terms")]
                            .isArray());
        } else {
            KVSCOPE_VERIFY_ONE_LINE_ERROR(run, needle);
        }
    }
};

QTEST_GUILESS_MAIN(TestExplainLog)
#include "tst_explain_log.moc"
