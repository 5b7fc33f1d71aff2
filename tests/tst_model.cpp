// Config resolution over the real fixture configs (docs/formulas.md §1), parameter totals against
// published counts, and malformed, truncated and hostile JSON.
#include "core/law/law.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"

#include <QtTest/QtTest>
#include <cmath>

using namespace kvscope;

namespace {

QString fixture(const char* file) {
    return QStringLiteral(KVSCOPE_FIXTURES_DIR "/") + QString::fromLatin1(file);
}

} // namespace

class TestModel : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void fixtures_data();
    void fixtures();
    void publishedParameterCounts_data();
    void publishedParameterCounts();
    void presetsResolve();
    void llama3PresetIsTheChaptersModel();
    void provenance();
    void textConfigNesting();
    void falconNewDecoderArchitecture();
    void aliasOrder();
    void mlaWithoutQueryLora();
    void windowPatterns_data();
    void windowPatterns();
    void hfCacheName();
    void malformedJson_data();
    void malformedJson();
    void invalidFields_data();
    void invalidFields();
    void hostileBytes();
    void gpuFiles_data();
    void gpuFiles();
};

void TestModel::fixtures_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("attention");
    QTest::addColumn<qint64>("layers");
    QTest::addColumn<qint64>("qHeads");
    QTest::addColumn<qint64>("kvHeads");
    QTest::addColumn<qint64>("headDim");
    QTest::addColumn<QString>("kvSource");
    QTest::newRow("qwen3-32b declared head_dim")
        << "Qwen__Qwen3-32B.json"
        << "GQA" << 64LL << 64LL << 8LL << 128LL << "num_key_value_heads";
    QTest::newRow("chatglm3-6b multi_query_group_num")
        << "THUDM__chatglm3-6b.json"
        << "GQA" << 28LL << 32LL << 2LL << 128LL << "multi_query_group_num";
    QTest::newRow("santacoder multi_query")
        << "bigcode__gpt_bigcode-santacoder.json"
        << "MQA" << 24LL << 16LL << 1LL << 128LL << "multi_query: true";
    QTest::newRow("deepseek-v3 mla")
        << "deepseek-ai__DeepSeek-V3.json"
        << "MLA" << 61LL << 128LL << 1LL << 192LL << "kv_lora_rank present";
    QTest::newRow("gemma-2-9b") << "google__gemma-2-9b.json"
                                << "GQA" << 42LL << 16LL << 8LL << 256LL << "num_key_value_heads";
    QTest::newRow("llama-2-7b mha")
        << "meta-llama__Llama-2-7b-hf.json"
        << "MHA" << 32LL << 32LL << 32LL << 128LL << "num_key_value_heads";
    QTest::newRow("llama-3-8b") << "meta-llama__Meta-Llama-3-8B.json"
                                << "GQA" << 32LL << 32LL << 8LL << 128LL << "num_key_value_heads";
    QTest::newRow("llama-3.1-70b")
        << "meta-llama__Meta-Llama-3.1-70B.json"
        << "GQA" << 80LL << 64LL << 8LL << 128LL << "num_key_value_heads";
    QTest::newRow("mixtral-8x7b") << "mistralai__Mixtral-8x7B-v0.1.json"
                                  << "GQA" << 32LL << 32LL << 8LL << 128LL << "num_key_value_heads";
    QTest::newRow("falcon-7b multi_query")
        << "tiiuae__falcon-7b.json"
        << "MQA" << 32LL << 71LL << 1LL << 64LL << "multi_query: true";
    QTest::newRow("redpajama gpt-neox mha fallback")
        << "togethercomputer__RedPajama-INCITE-3B-v1.json"
        << "MHA" << 32LL << 32LL << 32LL << 80LL << "fallback: num_attention_heads";
}

void TestModel::fixtures() {
    QFETCH(QString, file);
    QFETCH(QString, attention);
    QFETCH(qint64, layers);
    QFETCH(qint64, qHeads);
    QFETCH(qint64, kvHeads);
    QFETCH(qint64, headDim);
    QFETCH(QString, kvSource);
    auto m = loadModelConfigFile(fixture(file.toLatin1().constData()).toStdString());
    QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
    QCOMPARE(QString::fromStdString(toString(m->attention())), attention);
    QCOMPARE(m->layers.value, layers);
    QCOMPARE(m->qHeads.value, qHeads);
    QCOMPARE(m->kvHeads.value, kvHeads);
    QCOMPARE(m->headDim.value, headDim);
    QVERIFY2(QString::fromStdString(m->kvHeads.source).startsWith(kvSource),
             m->kvHeads.source.c_str());
    // Every fixture evaluates on an H100 at TP=1 with its own numbers.
    auto r = evaluate(m.value(), loadGpu("h100-sxm").value(), Deployment{});
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QVERIFY(r->cellBytesPerToken > 0);
}

void TestModel::publishedParameterCounts_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<double>("published");
    QTest::newRow("llama-3-8b 8.03B") << "meta-llama__Meta-Llama-3-8B.json" << 8.03e9;
    QTest::newRow("llama-3.1-70b 70.55B") << "meta-llama__Meta-Llama-3.1-70B.json" << 70.55e9;
    QTest::newRow("deepseek-v3 671.0B without MTP") << "deepseek-ai__DeepSeek-V3.json" << 671.0e9;
    QTest::newRow("mixtral-8x7b 46.7B") << "mistralai__Mixtral-8x7B-v0.1.json" << 46.7e9;
    QTest::newRow("qwen3-32b 32.76B") << "Qwen__Qwen3-32B.json" << 32.76e9;
    QTest::newRow("gemma-2-9b 9.24B tied") << "google__gemma-2-9b.json" << 9.24e9;
    QTest::newRow("falcon-7b 6.92B") << "tiiuae__falcon-7b.json" << 6.92e9;
    QTest::newRow("llama-2-7b 6.74B") << "meta-llama__Llama-2-7b-hf.json" << 6.74e9;
    QTest::newRow("chatglm3-6b 6.24B") << "THUDM__chatglm3-6b.json" << 6.24e9;
}

void TestModel::publishedParameterCounts() {
    QFETCH(QString, file);
    QFETCH(double, published);
    auto m = loadModelConfigFile(fixture(file.toLatin1().constData()).toStdString());
    QVERIFY(m.ok());
    const double counted = static_cast<double>(countParams(m.value()).total());
    QVERIFY2(std::fabs(counted - published) / published < 0.02,
             qPrintable(QStringLiteral("counted %1 vs published %2").arg(counted).arg(published)));
}

void TestModel::presetsResolve() {
    const auto presets = modelPresets();
    QVERIFY(presets.size() >= 12);
    QCOMPARE(presets.front().id, std::string(kDefaultModelId));
    for (const char* id : {"llama-3-70b", "llama-3-8b", "llama-3.1-405b", "qwen3-32b",
                           "mixtral-8x7b", "deepseek-v3", "deepseek-v2-lite", "falcon-7b",
                           "santacoder", "chatglm3-6b", "gemma-2-9b", "redpajama-incite-3b"}) {
        auto m = loadModel(id);
        QVERIFY2(m.ok(), id);
    }
    // Published totals for the presets without a fixture.
    const double l405 =
        static_cast<double>(countParams(loadModel("llama-3.1-405b").value()).total());
    QVERIFY(std::fabs(l405 - 405.85e9) / 405.85e9 < 0.02);
    const auto lite = loadModel("deepseek-v2-lite").value();
    QVERIFY(lite.mla);
    QCOMPARE(lite.qLoraRank.value, 0LL);
    const double liteParams = static_cast<double>(countParams(lite).total());
    QVERIFY(std::fabs(liteParams - 15.7e9) / 15.7e9 < 0.02);
    const auto gpus = gpuPresets();
    for (const char* id :
         {"a100-80gb",    "h100-sxm",  "h100-pcie", "h200",  "b200", "l40s",     "rtx-4090",
          "mi300x",       "a100-40gb", "a10g",      "l4",    "l40",  "rtx-3090", "rtx-pro-6000",
          "rtx-2000-ada", "h20",       "h800",      "gb200", "b300", "mi325x",   "mi355x"})
        QVERIFY2(loadGpu(id).ok(), id);
    QCOMPARE(gpus.size(), std::size_t(21));
    QCOMPARE(std::round(loadGpu("h100-sxm").value().ridgeBf16()), 295.0);
}

void TestModel::llama3PresetIsTheChaptersModel() {
    const auto m = loadModel("llama-3-70b").value();
    QCOMPARE(m.maxPositionEmbeddings.value, 8192LL);
    QCOMPARE(m.layers.value, 80LL);
    const std::string json = modelPresetJson("llama-3-70b");
    QVERIFY(json.find("rope_scaling") == std::string::npos);
}

void TestModel::provenance() {
    const auto llama = loadModel("llama-3-70b").value();
    QCOMPARE(llama.headDim.source, std::string("fallback: hidden_size / num_attention_heads"));
    QCOMPARE(llama.layers.source, std::string("num_hidden_layers"));
    const auto qwen = loadModel("qwen3-32b").value();
    QCOMPARE(qwen.headDim.source, std::string("head_dim"));
    QCOMPARE(qwen.headDim.value, 128LL); // not 5120 / 64 = 80
    const auto falcon = loadModel("falcon-7b").value();
    QCOMPARE(falcon.layers.source, std::string("n_layer"));
    QCOMPARE(falcon.qHeads.source, std::string("n_head"));
    const auto gemma = loadModel("gemma-2-9b").value();
    QCOMPARE(gemma.tiedEmbeddings.source, std::string("fallback: transformers' default (tied)"));
    QVERIFY(gemma.tiedEmbeddings.value);
    QCOMPARE(gemma.servedDtypeBytes, 2LL); // float32 checkpoint, served in 16-bit
}

void TestModel::textConfigNesting() {
    const char* cfg = R"({"architectures": ["LlavaForConditionalGeneration"],
        "model_type": "llava", "torch_dtype": "float16",
        "vision_config": {"num_hidden_layers": 24, "num_attention_heads": 16, "hidden_size": 1024},
        "text_config": {"model_type": "llama", "num_hidden_layers": 32,
                        "num_attention_heads": 32, "num_key_value_heads": 8,
                        "hidden_size": 4096, "intermediate_size": 14336, "vocab_size": 128256}})";
    auto m = parseModelConfig(cfg, "llava");
    QVERIFY(m.ok());
    QCOMPARE(m->layers.value, 32LL);
    QCOMPARE(m->kvHeads.value, 8LL);
    QCOMPARE(m->layers.source, std::string("text_config.num_hidden_layers"));
    QCOMPARE(m->torchDtype.value, std::string("float16"));
}

void TestModel::falconNewDecoderArchitecture() {
    // Falcon-40B: multi_query is ignored under new_decoder_architecture; num_kv_heads counts.
    const char* cfg = R"({"model_type": "falcon", "new_decoder_architecture": true,
        "multi_query": true, "num_hidden_layers": 60, "num_attention_heads": 128,
        "num_kv_heads": 8, "hidden_size": 8192, "vocab_size": 65024})";
    auto m = parseModelConfig(cfg, "falcon-40b");
    QVERIFY(m.ok());
    QCOMPARE(m->kvHeads.value, 8LL);
    QCOMPARE(m->kvHeads.source, std::string("num_kv_heads"));
    // The same flags on a non-Falcon model: multi_query wins (one KV head).
    const char* other = R"({"model_type": "gpt_bigcode", "new_decoder_architecture": true,
        "multi_query": true, "n_layer": 2, "n_head": 8, "n_embd": 512, "num_kv_heads": 8})";
    QCOMPARE(parseModelConfig(other, "x")->kvHeads.value, 1LL);
}

void TestModel::aliasOrder() {
    // vLLM's order: n_head_kv, num_kv_heads, num_key_value_heads, multi_query_group_num, ...
    const char* cfg = R"({"num_hidden_layers": 2, "num_attention_heads": 16, "hidden_size": 1024,
        "num_key_value_heads": 4, "n_head_kv": 2, "multi_query_group_num": 8})";
    auto m = parseModelConfig(cfg, "x");
    QVERIFY(m.ok());
    QCOMPARE(m->kvHeads.value, 2LL);
    QCOMPARE(m->kvHeads.source, std::string("n_head_kv"));
}

void TestModel::mlaWithoutQueryLora() {
    const auto lite = loadModel("deepseek-v2-lite").value();
    auto r = evaluate(lite, loadGpu("h100-sxm").value(), Deployment{});
    QVERIFY(r.ok());
    QCOMPARE(r->cellBytesPerToken, 27LL * 576 * 2);
    // kv_lora_rank: null means not MLA.
    const char* cfg = R"({"num_hidden_layers": 2, "num_attention_heads": 16, "hidden_size": 1024,
        "kv_lora_rank": null})";
    QVERIFY(!parseModelConfig(cfg, "x")->mla);
}

void TestModel::windowPatterns_data() {
    QTest::addColumn<QString>("config");
    QTest::addColumn<qint64>("windowLayers");
    QTest::addColumn<qint64>("firstLayerWindow");
    const QString base = QStringLiteral(
        R"({"num_hidden_layers": 12, "num_attention_heads": 8, "hidden_size": 512, %1})");
    QTest::newRow("mistral all layers")
        << base.arg(QStringLiteral(R"("sliding_window": 4096)")) << 12LL << 4096LL;
    QTest::newRow("qwen use_sliding_window false")
        << base.arg(QStringLiteral(R"("sliding_window": 4096, "use_sliding_window": false)")) << 0LL
        << 0LL;
    QTest::newRow("gemma3 pattern 6")
        << base.arg(QStringLiteral(R"("sliding_window": 1024, "sliding_window_pattern": 6)"))
        << 10LL << 1024LL;
    QTest::newRow("layer_types")
        << base.arg(QStringLiteral(
               R"("sliding_window": 128, "layer_types": ["full_attention", "sliding_attention",
               "full_attention", "sliding_attention", "full_attention", "sliding_attention",
               "full_attention", "sliding_attention", "full_attention", "sliding_attention",
               "full_attention", "sliding_attention"])"))
        << 6LL << 0LL;
    QTest::newRow("null window") << base.arg(QStringLiteral(R"("sliding_window": null)")) << 0LL
                                 << 0LL;
}

void TestModel::windowPatterns() {
    QFETCH(QString, config);
    QFETCH(qint64, windowLayers);
    QFETCH(qint64, firstLayerWindow);
    auto m = parseModelConfig(config.toStdString(), "x");
    QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
    QCOMPARE(m->windowLayerCount(), windowLayers);
    QCOMPARE(m->layerWindow.front(), firstLayerWindow);
}

void TestModel::hfCacheName() {
    QTemporaryDir dir;
    const QString snap =
        dir.path() + QStringLiteral("/hub/models--meta-llama--Meta-Llama-3-8B/snapshots/abc123");
    QVERIFY(QDir().mkpath(snap));
    QFile::copy(fixture("meta-llama__Meta-Llama-3-8B.json"), snap + QStringLiteral("/config.json"));
    auto m = loadModel((snap + QStringLiteral("/config.json")).toStdString());
    QVERIFY(m.ok());
    QCOMPARE(m->name, std::string("meta-llama/Meta-Llama-3-8B"));
    auto byFolder = loadModel(snap.toStdString());
    QVERIFY(byFolder.ok());
}

namespace {

/// A config parseModelConfig must refuse, with `field` and a rule containing `ruleContains`, in
/// one line.
void verifyRefused(const QByteArray& json, const QString& field, const QString& ruleContains) {
    auto m = parseModelConfig(
        std::string_view(json.constData(), static_cast<std::size_t>(json.size())), "bad");
    QVERIFY(!m.ok());
    QCOMPARE(QString::fromStdString(m.error().field), field);
    QVERIFY2(QString::fromStdString(m.error().rule).contains(ruleContains),
             m.error().message().c_str());
    QVERIFY(m.error().message().find('\n') == std::string::npos);
}

} // namespace

void TestModel::malformedJson_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("ruleContains");
    QTest::newRow("empty") << QByteArray("") << "malformed JSON";
    QTest::newRow("truncated") << QByteArray(R"({"num_hidden_layers": 80, "num_attention_he)")
                               << "malformed JSON";
    QTest::newRow("array") << QByteArray("[1, 2, 3]") << "JSON object";
    QTest::newRow("deep nesting") << QByteArray(100000, '[') << "nested deeper";
    // NaN is a literal only as a whole word.
    QTest::newRow("NaN inside a word is no literal")
        << QByteArray(
               R"({"num_hidden_layers": NaNa, "num_attention_heads": 8, "hidden_size": 512})")
        << "malformed JSON";
}

void TestModel::malformedJson() {
    QFETCH(QByteArray, json);
    QFETCH(QString, ruleContains);
    verifyRefused(json, QStringLiteral("config.json"), ruleContains);
}

void TestModel::invalidFields_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("ruleContains");
    QTest::newRow("missing layers")
        << QByteArray(R"({"num_attention_heads": 8, "hidden_size": 512})") << "num_hidden_layers"
        << "missing (also looked for n_layer, num_layers, n_layers)";
    QTest::newRow("missing heads")
        << QByteArray(R"({"num_hidden_layers": 2, "hidden_size": 512})") << "num_attention_heads"
        << "missing";
    QTest::newRow("zero heads")
        << QByteArray(R"({"num_hidden_layers": 2, "num_attention_heads": 0, "hidden_size": 512})")
        << "num_attention_heads"
        << "positive integer, got 0";
    QTest::newRow("negative layers")
        << QByteArray(R"({"num_hidden_layers": -80, "num_attention_heads": 8, "hidden_size": 512})")
        << "num_hidden_layers"
        << "positive integer, got -80";
    QTest::newRow("string heads")
        << QByteArray(
               R"({"num_hidden_layers": 2, "num_attention_heads": "64", "hidden_size": 512})")
        << "num_attention_heads"
        << "must be an integer, got a string";
    QTest::newRow("fractional hidden")
        << QByteArray(R"({"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 511.5})")
        << "hidden_size"
        << "must be an integer";
    QTest::newRow("absurd layers")
        << QByteArray(
               R"({"num_hidden_layers": 1e12, "num_attention_heads": 8, "hidden_size": 512})")
        << "num_hidden_layers"
        << "at most";
    QTest::newRow("huge unsigned")
        << QByteArray(
               R"({"num_hidden_layers": 18446744073709551615, "num_attention_heads": 8, "hidden_size": 512})")
        << "num_hidden_layers"
        << "at most";
    QTest::newRow("kv heads do not divide")
        << QByteArray(
               R"({"num_hidden_layers": 2, "num_attention_heads": 64, "num_key_value_heads": 7, "hidden_size": 8192})")
        << "num_key_value_heads"
        << "must divide num_attention_heads (64), got 7";
    QTest::newRow("head dim undefinable")
        << QByteArray(R"({"num_hidden_layers": 2, "num_attention_heads": 3, "hidden_size": 100})")
        << "head_dim"
        << "not divisible";
    QTest::newRow("layer_types length")
        << QByteArray(
               R"({"num_hidden_layers": 3, "num_attention_heads": 8, "hidden_size": 512, "sliding_window": 8, "layer_types": ["full_attention"]})")
        << "layer_types"
        << "one entry per layer (3)";
    QTest::newRow("multi_query not bool")
        << QByteArray(R"({"n_layer": 2, "n_head": 8, "n_embd": 512, "multi_query": "yes"})")
        << "multi_query"
        << "true or false";
    QTest::newRow("mla missing rope")
        << QByteArray(
               R"({"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512, "kv_lora_rank": 64, "qk_nope_head_dim": 32, "v_head_dim": 32})")
        << "qk_rope_head_dim"
        << "missing";
    QTest::newRow("absurd total")
        << QByteArray(
               R"({"num_hidden_layers": 10000, "num_attention_heads": 65536, "hidden_size": 1048576, "intermediate_size": 16000000, "num_local_experts": 1000000})")
        << "hidden_size"
        << "absurd";
    // Python's json (and so every engine) reads NaN; it is then no layer count.
    QTest::newRow("nan literal")
        << QByteArray(R"({"num_hidden_layers": NaN, "num_attention_heads": 8, "hidden_size": 512})")
        << "num_hidden_layers"
        << "must be an integer, got NaN";
    QTest::newRow("infinity literal")
        << QByteArray(
               R"({"num_hidden_layers": 2, "num_attention_heads": -Infinity, "hidden_size": 512})")
        << "num_attention_heads"
        << "must be an integer, got -Infinity";
}

void TestModel::invalidFields() {
    QFETCH(QByteArray, json);
    QFETCH(QString, field);
    QFETCH(QString, ruleContains);
    verifyRefused(json, field, ruleContains);
}

void TestModel::hostileBytes() {
    // Random bytes, a 17 MiB file, embedded NULs and invalid UTF-8: errors, never a crash.
    QRandomGenerator rng(1234);
    for (int i = 0; i < 200; ++i) {
        QByteArray bytes(static_cast<int>(rng.bounded(1, 4096)), Qt::Uninitialized);
        for (auto& b : bytes)
            b = static_cast<char>(rng.bounded(256));
        if (i % 2)
            bytes.prepend("{\"num_hidden_layers\": ");
        auto m = parseModelConfig(
            std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())), "rand");
        QVERIFY(!m.ok());
    }
    const std::string big(17 * 1024 * 1024, ' ');
    QVERIFY(!parseModelConfig(big, "big").ok());
    QCOMPARE(parseModelConfig(big, "big").error().field, std::string("config.json"));
    const std::string nul("{\"num_hidden_layers\": 2\0}", 24);
    QVERIFY(!parseModelConfig(nul, "nul").ok());
    QVERIFY(!loadModel("/nonexistent/config.json").ok());
    QCOMPARE(loadModel("no-such-preset").error().message(),
             std::string("model: no preset or file named 'no-such-preset' (kvscope-cli models "
                         "lists the presets)"));
}

void TestModel::gpuFiles_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("error"); // empty: valid
    QTest::newRow("valid custom") << QByteArray(R"({"id": "my-gpu", "memory_gb": 96,
        "bandwidth_tb_s": 4, "bf16_tflops": 1000, "fp32_tflops": 60})")
                                  << "";
    QTest::newRow("missing bandwidth")
        << QByteArray(R"({"memory_gb": 96, "bf16_tflops": 1000, "fp32_tflops": 60})")
        << "bandwidth_tb_s: missing";
    QTest::newRow("negative memory") << QByteArray(R"({"memory_gb": -1, "bandwidth_tb_s": 4,
        "bf16_tflops": 1000, "fp32_tflops": 60})")
                                     << "memory_gb: must be a positive number";
    QTest::newRow("string peak") << QByteArray(R"({"memory_gb": 96, "bandwidth_tb_s": 4,
        "bf16_tflops": "lots", "fp32_tflops": 60})")
                                 << "bf16_tflops: must be a number";
    QTest::newRow("garbage") << QByteArray("\x01\x02\x03") << "gpu: malformed JSON";
}

void TestModel::gpuFiles() {
    QFETCH(QByteArray, json);
    QFETCH(QString, error);
    auto g = parseGpuJson(json.toStdString(), "custom");
    if (error.isEmpty()) {
        QVERIFY(g.ok());
        QCOMPARE(g->id, std::string("my-gpu"));
        QCOMPARE(g->memoryBytes, 96'000'000'000LL);
        QCOMPARE(g->reportedMemoryBytes(), 96'000'000'000LL); // driver figure unknown
        return;
    }
    QVERIFY(!g.ok());
    QVERIFY2(QString::fromStdString(g.error().message()).startsWith(error),
             g.error().message().c_str());
}

QTEST_GUILESS_MAIN(TestModel)
#include "tst_model.moc"
