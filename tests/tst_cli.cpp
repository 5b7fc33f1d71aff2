// kvscope-cli's contract: the chapter's headline numbers, the --json keys, and exit status 2
// with exactly one "error:" line for every kind of bad input.
#include "cli_runner.h"
#include "core/features/schema.h"
#include "core/features/session.h"
#include "core/version.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest/QtTest>

namespace {

using Run = CliRun;

Run cli(const QStringList& args) {
    return runCli(args, 60000);
}

/// Every sub-command kvscope-cli registers (app/cli/cmd_*.cpp); commandsAreListed checks the
/// binary's own list against it, so a new command gets its --help and --version rows here.
const char* const kCommands[] = {"compare", "explain-log", "gpus", "measure",
                                 "models",  "plan",        "size", "sweep"};

QStringList words(const char* s) {
    return QString::fromLatin1(s).split(QLatin1Char(' '), Qt::SkipEmptyParts);
}

} // namespace

class TestCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void headline_data();
    void headline();
    void jsonKeys();
    void readableReport();
    void sweepCsv();
    void sweepBatchStepTable();
    void listings();
    void badInput_data();
    void badInput();
    void badFiles_data();
    void badFiles();
    void commandsAreListed();
    void help_data();
    void help();
    void commandVersion_data();
    void commandVersion();
    void sizeHelpListsEverySchemaFlag();
    void version();
    void schemaFlagRoundTrip_data();
    void schemaFlagRoundTrip();
};

void TestCli::headline_data() {
    QTest::addColumn<QString>("args");
    QTest::addColumn<qint64>("maxConcurrency");
    QTest::addColumn<qint64>("cellPerRank");
    const char* base = "size --model llama-3-70b --tp 8 --gpu h100-sxm --pool-model datasheet "
                       "--context 8192 --json";
    QTest::newRow("llama3-70b tp8 gqa8 162") << QString::fromLatin1(base) << 162LL << 40960LL;
    QTest::newRow("llama3-70b tp8 mha 20")
        << QString::fromLatin1(base) + QStringLiteral(" --h-kv 64") << 20LL << 327680LL;
    QTest::newRow("llama3-70b tp8 mqa 162")
        << QString::fromLatin1(base) + QStringLiteral(" --h-kv 1") << 162LL << 40960LL;
}

void TestCli::headline() {
    QFETCH(QString, args);
    QFETCH(qint64, maxConcurrency);
    QFETCH(qint64, cellPerRank);
    const Run r = cli(args.split(QLatin1Char(' ')));
    QCOMPARE(r.status, QProcess::NormalExit);
    QCOMPARE(r.exitCode, 0);
    const auto j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(j.value(QStringLiteral("max_concurrency")).toInteger(), maxConcurrency);
    QCOMPARE(j.value(QStringLiteral("cell_bytes_per_token_per_rank")).toInteger(), cellPerRank);
}

void TestCli::jsonKeys() {
    const Run r = cli(words("size --model deepseek-v3 --tp 16 --gpu h200 --json"));
    QCOMPARE(r.exitCode, 0);
    const auto j = QJsonDocument::fromJson(r.out.toUtf8()).object();
    for (const char* key :
         {"model", "tp", "dcp", "q_heads_per_rank", "kv_heads_per_rank", "kv_replicated",
          "cell_bytes_per_token", "cell_bytes_per_token_per_rank", "request_bytes_per_rank",
          "pool_bytes_per_rank", "tokens_capacity", "max_concurrency", "page_bytes",
          "blocks_per_rank", "intensity_flop_per_byte", "ridge_flop_per_byte",
          "attainable_fraction_of_peak", "kv_proj_params_per_layer", "weight_bytes_per_rank"})
        QVERIFY2(j.contains(QLatin1String(key)), key);
    const auto model = j.value(QStringLiteral("model")).toObject();
    for (const char* key : {"name", "attention", "layers", "q_heads", "kv_heads", "head_dim",
                            "kv_lora_rank", "qk_rope_head_dim", "params"})
        QVERIFY2(model.contains(QLatin1String(key)), key);
    QCOMPARE(model.value(QStringLiteral("attention")).toString(), QStringLiteral("MLA"));
    QCOMPARE(j.value(QStringLiteral("cell_bytes_per_token")).toInteger(), 70272);
    QCOMPARE(j.value(QStringLiteral("q_heads_per_rank")).toInteger(), 8);
    QCOMPARE(j.value(QStringLiteral("kv_replicated")).toBool(), true);
    QCOMPARE(qRound(j.value(QStringLiteral("intensity_flop_per_byte")).toDouble()), 15);
    // Bytes are integers, not rounded floats.
    QVERIFY(r.out.contains(QLatin1String("\"pool_bytes_per_rank\": ")) &&
            !r.out.contains(QLatin1String("\"pool_bytes_per_rank\": 3.3e")));
}

void TestCli::readableReport() {
    const Run r = cli(words("size --model llama-3-70b --tp 8 --pool-model datasheet"));
    QCOMPARE(r.exitCode, 0);
    const QString& out = r.out;
    QVERIFY(out.contains(QStringLiteral("320 KiB (327,680 B)")));
    QVERIFY(out.contains(QStringLiteral("40 KiB (40,960 B)")));
    QVERIFY(out.contains(QStringLiteral("50.6 GiB")));
    QVERIFY(out.contains(QStringLiteral("fallback: hidden_size / num_attention_heads")));
    QVERIFY(out.contains(QStringLiteral("GPU KV cache size: ")));
    QVERIFY(out.contains(QStringLiteral("Maximum concurrency for 8,192 tokens per request: 162.")));
    const Run v = cli(words("size --model llama-3-70b --tp 8"));
    QVERIFY(v.out.contains(QStringLiteral("activation peak")));
    QVERIFY(v.out.contains(QStringLiteral("NCCL")));
}

void TestCli::sweepCsv() {
    const Run r = cli(words("sweep --model llama-3-8b --csv"));
    QCOMPARE(r.exitCode, 0);
    const auto lines = r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QVERIFY(lines.first().startsWith(QStringLiteral("tp,variant,kv_heads")));
    // TP 1..32 × 6 variants (32, 16, 8, 4, 2, 1 KV heads) + header.
    QCOMPARE(lines.size(), 6 * 6 + 1);
    // Llama-3-8B at TP=16 (GQA-8: eight KV groups of g = 4, the GQA paper's naming): one
    // replicated KV head per rank, 16 KiB per token per rank.
    QVERIFY(std::any_of(lines.begin(), lines.end(), [](const QString& l) {
        return l.startsWith(QStringLiteral("16,GQA-8,8,1,true,131072,16384,"));
    }));
}

void TestCli::sweepBatchStepTable() {
    // --batch: the decode step for every h_kv and batch at --tp (core/law/step.h).
    const Run r = cli(words("sweep --model llama-3-70b --gpu h200 --tp 2 --batch 1,6 --csv"));
    QCOMPARE(r.exitCode, 0);
    const auto lines = r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QVERIFY(lines.first().startsWith(QStringLiteral("variant,kv_heads,batch,weight_bytes,")));
    QCOMPARE(lines.size(), 7 * 2 + 1); // 7 layouts × 2 batches + header
    // h_kv 8 at batch 6: 69,503,033,344 B of weights and 6 × 1.34 GB of KV per rank, memory-bound.
    QVERIFY(std::any_of(lines.begin(), lines.end(), [](const QString& l) {
        return l.contains(QStringLiteral(",8,6,69503033344,8053063680,")) &&
               l.contains(QStringLiteral(",memory,"));
    }));
    const Run text = cli(words("sweep --model llama-3-70b --tp 8 --batch 1,64"));
    QCOMPARE(text.exitCode, 0);
    QVERIFY(text.out.contains(QStringLiteral("ms/token")));
    const Run bad = cli(words("sweep --model llama-3-70b --batch 1,0"));
    QCOMPARE(bad.exitCode, 2);
    QVERIFY(bad.err.contains(QStringLiteral("--batch: must be a comma-separated list")));
}

void TestCli::listings() {
    const Run m = cli({QStringLiteral("models")});
    QCOMPARE(m.exitCode, 0);
    QVERIFY(m.out.startsWith(QLatin1String("llama-3-70b")));
    QVERIFY(m.out.contains(QLatin1String("deepseek-v3")));
    const Run g = cli({QStringLiteral("gpus")});
    QCOMPARE(g.exitCode, 0);
    QVERIFY(g.out.contains(QLatin1String("h100-sxm")));
    QVERIFY(g.out.contains(QLatin1String("989.4 TFLOP/s")));
}

void TestCli::badInput_data() {
    QTest::addColumn<QString>("args");
    QTest::addColumn<QString>("errorContains");
    QTest::newRow("unknown command") << "frobnicate"
                                     << "unknown command";
    QTest::newRow("unknown flag") << "size --model llama-3-70b --tpp 8"
                                  << "--tpp: unknown option";
    QTest::newRow("missing value") << "size --model"
                                   << "--model: needs a value";
    QTest::newRow("tp not a number") << "size --tp eight"
                                     << "--tp: must be an integer";
    QTest::newRow("tp zero") << "size --tp 0"
                             << "tp: must be a positive integer";
    QTest::newRow("tp does not divide") << "size --tp 3"
                                        << "must be divisible by tensor parallel size (3)";
    QTest::newRow("h-kv not a divisor") << "size --h-kv 5"
                                        << "h_kv: must divide";
    QTest::newRow("dcp gqa") << "size --tp 8 --dcp 2"
                             << "Decode context parallelism";
    QTest::newRow("bad dtype") << "size --kv-dtype int3"
                               << "kv-dtype: must be one of";
    QTest::newRow("util above one") << "size --gpu-mem-util 1.2"
                                    << "gpu-mem-util: must be in (0, 1]";
    QTest::newRow("util nan") << "size --gpu-mem-util nan"
                              << "--gpu-mem-util: must be a number";
    QTest::newRow("context negative") << "size --context -5"
                                      << "context: must be a positive";
    QTest::newRow("context absurd") << "size --context 99999999999999"
                                    << "context: must be at most";
    QTest::newRow("unknown model") << "size --model gpt-17"
                                   << "no preset or file named 'gpt-17'";
    QTest::newRow("unknown gpu") << "size --gpu tpu-v9"
                                 << "no preset or file named 'tpu-v9'";
    QTest::newRow("pool model") << "size --pool-model magic"
                                << "pool-model: must be vllm or datasheet";
    QTest::newRow("latent on gqa") << "size --h-kv latent"
                                   << "needs an MLA model";
    QTest::newRow("block size") << "size --block-size 7"
                                << "block-size: must be one of";
}

void TestCli::badInput() {
    QFETCH(QString, args);
    QFETCH(QString, errorContains);
    const Run r = cli(args.split(QLatin1Char(' ')));
    QCOMPARE(r.exitCode, 2);
    QVERIFY(r.out.isEmpty());
    KVSCOPE_VERIFY_ONE_LINE_ERROR(r, errorContains);
}

void TestCli::badFiles_data() {
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("errorContains");
    QTest::newRow("binary garbage") << QByteArray("\x7f"
                                                  "ELF\x02\x01\x01\0\0\0",
                                                  10)
                                    << "malformed JSON";
    QTest::newRow("truncated") << QByteArray(R"({"num_hidden_layers": 80, "num_attention_he)")
                               << "malformed JSON";
    QTest::newRow("missing fields")
        << QByteArray(R"({"hidden_size": 8192})") << "num_hidden_layers: missing";
    QTest::newRow("zero heads")
        << QByteArray(R"({"num_hidden_layers": 80, "num_attention_heads": 0, "hidden_size": 8192})")
        << "num_attention_heads: must be a positive integer";
    QTest::newRow("deep nesting") << QByteArray(200000, '{') << "nested deeper";
}

void TestCli::badFiles() {
    QFETCH(QByteArray, content);
    QFETCH(QString, errorContains);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("config.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(content);
    f.close();
    const Run r = cli({QStringLiteral("size"), QStringLiteral("--model"), path});
    QCOMPARE(r.exitCode, 2);
    KVSCOPE_VERIFY_ONE_LINE_ERROR(r, errorContains);
}

// The top-level help's command list (CLI11's "Subcommands:" block) is kCommands plus "help".
void TestCli::commandsAreListed() {
    const Run r = cli({QStringLiteral("--help")});
    QCOMPARE(r.exitCode, 0);
    const qsizetype at = r.out.indexOf(QLatin1String("Subcommands:"), 0, Qt::CaseInsensitive);
    QVERIFY2(at >= 0, qPrintable(r.out));
    QStringList listed;
    for (const QString& line : r.out.mid(at).split(QLatin1Char('\n')).mid(1)) {
        if (!line.startsWith(QLatin1String("  ")))
            break; // the block ends at the first unindented or empty line
        if (line.size() > 2 && line.at(2) != QLatin1Char(' ')) // wrapped text: indented more
            listed << line.trimmed().section(QLatin1Char(' '), 0, 0);
    }
    QStringList expected{QStringLiteral("help")};
    for (const char* c : kCommands)
        expected << QString::fromLatin1(c);
    listed.sort();
    expected.sort();
    QCOMPARE(listed, expected);
}

void TestCli::help_data() {
    QTest::addColumn<QString>("command");
    for (const char* c : kCommands)
        QTest::newRow(c) << QString::fromLatin1(c);
}

void TestCli::help() {
    QFETCH(QString, command);
    const Run r = cli({command, QStringLiteral("--help")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
    QVERIFY2(r.out.contains(QStringLiteral("Usage: kvscope-cli ") + command),
             qPrintable(r.out.left(300)));
    // `help COMMAND` prints the same page.
    const Run h = cli({QStringLiteral("help"), command});
    QCOMPARE(h.exitCode, 0);
    QCOMPARE(h.out, r.out);
}

// `kvscope-cli COMMAND --version` prints the same line as `kvscope-cli --version`.
void TestCli::commandVersion_data() {
    help_data();
}

void TestCli::commandVersion() {
    QFETCH(QString, command);
    const Run r = cli({command, QStringLiteral("--version")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
    QCOMPARE(r.out, QStringLiteral("kvscope-cli ") + QString::fromLatin1(kvscope::kVersion) +
                        QLatin1Char('\n'));
}

void TestCli::sizeHelpListsEverySchemaFlag() {
    const Run r = cli({QStringLiteral("size"), QStringLiteral("--help")});
    QCOMPARE(r.exitCode, 0);
    for (const auto& f : kvscope::schemaFields())
        QVERIFY2(r.out.contains(QString::fromStdString(f.flag) + QLatin1Char(' ')), f.flag.c_str());
    QVERIFY(r.out.contains(QLatin1String("--json")));
    QVERIFY(r.out.contains(QLatin1String("--save-session")));
    // The top-level help lists every command.
    const Run top = cli({QStringLiteral("--help")});
    QCOMPARE(top.exitCode, 0);
    for (const char* c : {"size", "sweep", "compare", "plan", "explain-log", "measure"})
        QVERIFY2(top.out.contains(QString::fromLatin1(c)), c);
}

void TestCli::version() {
    const Run r = cli({QStringLiteral("--version")});
    QCOMPARE(r.exitCode, 0);
    QVERIFY(r.err.isEmpty());
    QCOMPARE(r.out, QStringLiteral("kvscope-cli ") + QString::fromLatin1(kvscope::kVersion) +
                        QLatin1Char('\n'));
    QVERIFY(QRegularExpression(QStringLiteral("^\\d+\\.\\d+\\.\\d+$"))
                .match(QString::fromLatin1(kvscope::kVersion))
                .hasMatch());
}

// Every schema row: `size <flag> <example> --save-session F` writes a session holding that
// value, which reads back into the same deployment.
void TestCli::schemaFlagRoundTrip_data() {
    QTest::addColumn<QString>("key");
    for (const auto& f : kvscope::schemaFields())
        QTest::newRow(f.key.c_str()) << QString::fromStdString(f.key);
}

void TestCli::schemaFlagRoundTrip() {
    QFETCH(QString, key);
    const kvscope::Field& f = *kvscope::findField(key.toStdString());
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.json"));
    // DCP > 1 needs an MLA model (or TP above h_kv); the rest take Llama-3-70B at TP 8.
    QStringList args = key == QLatin1String("dcp")
                           ? words("size --model deepseek-v3 --gpu h200 --tp 8")
                           : words("size --tp 8");
    args << QString::fromStdString(f.flag) << QString::fromStdString(f.example)
         << QStringLiteral("--save-session") << path << QStringLiteral("--json");
    const Run r = cli(args);
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
    QVERIFY(QJsonDocument::fromJson(r.out.toUtf8()).isObject());
    auto s = kvscope::loadSessionFile(path.toStdString());
    QVERIFY2(s.ok(), s.ok() ? "" : s.error().message().c_str());
    const auto got = f.get(s.value());
    QVERIFY(got.has_value());
    if (f.kind == kvscope::FieldKind::Number)
        QVERIFY2(std::abs(std::stod(*got) - std::stod(f.example)) <=
                     1e-9 * std::abs(std::stod(f.example)), // GPU memory: whole bytes
                 got->c_str());
    else
        QCOMPARE(QString::fromStdString(*got), QString::fromStdString(f.example));
    // The session resolves to a deployment the engine rules accept.
    auto sc = kvscope::resolveSession(s.value());
    QVERIFY2(sc.ok(), sc.ok() ? "" : sc.error().message().c_str());
    QCOMPARE(sc->deployment.tp, std::int64_t(8));
}

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
