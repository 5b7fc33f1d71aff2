// Sessions: JSON round trip, one-line errors naming the field, and the Hugging Face cache scan.
#include "core/features/schema.h"
#include "core/features/session.h"
#include "core/model/presets.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace kvscope;

namespace {

bool sameDeployment(const Deployment& a, const Deployment& b) {
    return a.tp == b.tp && a.dcp == b.dcp && a.kvHeads == b.kvHeads && a.kvDtype == b.kvDtype &&
           a.weightDtype == b.weightDtype && a.context == b.context && a.batch == b.batch &&
           a.gpuMemUtil == b.gpuMemUtil && a.poolModel == b.poolModel && a.poolGiB == b.poolGiB &&
           a.maxNumBatchedTokens == b.maxNumBatchedTokens && a.blockSize == b.blockSize;
}

/// Two field texts name the same value (numbers compared as numbers: "96" and "96.0"; GPU
/// memory is stored in whole bytes, so 79.19 GiB comes back within a byte).
bool sameText(const Field& f, const std::string& a, const std::string& b) {
    if (f.kind != FieldKind::Number)
        return a == b;
    const double x = std::stod(a), y = std::stod(b);
    return std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y));
}

void writeFile(const QString& path, const QByteArray& bytes) {
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

} // namespace

class TestSession : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void roundTrip_data() {
        QTest::addColumn<int>("variant");
        QTest::newRow("defaults") << 0;
        QTest::newRow("mha what-if at tp8, datasheet") << 1;
        QTest::newRow("deepseek-v3 fp8_ds_mla, fixed pool, dcp") << 2;
        QTest::newRow("custom gpu figures") << 3;
    }
    void roundTrip() {
        QFETCH(int, variant);
        Session s;
        Deployment& d = s.deployment;
        if (variant == 1) {
            d.tp = 8;
            d.kvHeads = 64;
            d.poolModel = PoolModel::Datasheet;
            d.context = 32768;
            d.batch = 20;
            d.gpuMemUtil = 0.85;
        } else if (variant == 2) {
            s.model = "deepseek-v3";
            s.gpu = "h200";
            d.tp = 8;
            d.dcp = 8;
            d.kvDtype = KvDtype::FP8DsMla;
            d.weightDtype = WeightDtype::FP8;
            d.poolGiB = 40.5;
            d.maxNumBatchedTokens = 16384;
            d.blockSize = 64;
        } else if (variant == 3) {
            GpuSpec g = loadGpu("h100-sxm").value();
            g.id = "my-gpu";
            g.name = "Lab card";
            g.memoryBytes = 96'000'000'000;
            g.driverMemoryBytes = 0;
            g.bandwidthBytesPerS = 4.0e12;
            s.customGpu = g;
        }
        const std::string text = sessionToJson(s);
        QVERIFY(text.size() < 2048); // small
        auto back = parseSession(text);
        QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
        QCOMPARE(back->model, s.model);
        QVERIFY(sameDeployment(back->deployment, s.deployment));
        QCOMPARE(back->customGpu.has_value(), s.customGpu.has_value());
        if (s.customGpu) {
            QCOMPARE(back->customGpu->memoryBytes, s.customGpu->memoryBytes);
            QCOMPARE(back->customGpu->bandwidthBytesPerS, s.customGpu->bandwidthBytesPerS);
            QCOMPARE(back->customGpu->name, s.customGpu->name);
        } else {
            QCOMPARE(back->gpu, s.gpu);
        }
        QCOMPARE(sessionToJson(back.value()), text); // stable
        auto sc = resolveSession(back.value());
        QVERIFY2(sc.ok(), sc.ok() ? "" : sc.error().message().c_str());
        QVERIFY(evaluate(sc->model, sc->gpu, sc->deployment).ok());
    }

    // Every schema row: its example as a flag value -> Session -> session JSON -> Session ->
    // the same value, and the flags written back from the session read the same again.
    void schemaFieldRoundTrip_data() {
        QTest::addColumn<QString>("key");
        for (const auto& f : schemaFields())
            QTest::newRow(f.key.c_str()) << QString::fromStdString(f.key);
    }
    void schemaFieldRoundTrip() {
        QFETCH(QString, key);
        const Field& f = *findField(key.toStdString());
        QVERIFY(!f.example.empty());
        QVERIFY(f.example != f.defaultText);
        QVERIFY2(f.check(f.example).empty(), f.check(f.example).c_str());
        auto applied = applyFieldTexts(Session{}, {{&f, f.example}});
        QVERIFY2(applied.ok(), applied.ok() ? "" : applied.error().message().c_str());
        QVERIFY(f.get(applied.value()).has_value());
        QVERIFY(sameText(f, *f.get(applied.value()), f.example));
        // The untouched session does not hold the example already (the test can fail).
        const auto before = f.get(Session{});
        QVERIFY(!before || !sameText(f, *before, f.example));

        auto back = parseSession(sessionToJson(applied.value()));
        QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
        QVERIFY(f.get(back.value()).has_value());
        QVERIFY2(sameText(f, *f.get(back.value()), f.example), f.get(back.value())->c_str());
        QVERIFY(sameDeployment(back->deployment, applied->deployment));

        const auto flags = sessionToFlags(back.value());
        FieldTexts texts;
        for (std::size_t i = 0; i + 1 < flags.size(); i += 2) {
            const Field* g = findField(flags[i]);
            QVERIFY2(g && g->flag == flags[i], flags[i].c_str());
            texts.emplace_back(g, flags[i + 1]);
        }
        auto again = applyFieldTexts(Session{}, texts);
        QVERIFY2(again.ok(), again.ok() ? "" : again.error().message().c_str());
        QCOMPARE(sessionToJson(again.value()), sessionToJson(back.value()));
    }

    // The defaults in the table are Deployment's and Session's own.
    void schemaDefaults() {
        const Session defaults;
        int deploymentRows = 0;
        for (const auto& f : schemaFields()) {
            if (f.group == FieldGroup::Deployment)
                ++deploymentRows;
            if (f.group == FieldGroup::CustomGpu)
                continue;
            const auto v = f.get(defaults);
            QCOMPARE(v.has_value(), !f.defaultText.empty());
            if (v)
                QCOMPARE(QString::fromStdString(*v), QString::fromStdString(f.defaultText));
            QVERIFY2(
                f.flag == "--" +
                              [&] {
                                  std::string k = f.key;
                                  for (char& c : k)
                                      if (c == '_')
                                          c = '-';
                                  return k;
                              }() ||
                    f.group != FieldGroup::Deployment,
                f.flag.c_str()); // one name: the flag is the key with dashes
        }
        QCOMPARE(deploymentRows, 15); // every member of Deployment (core/law/law.h)
        QCOMPARE(findField("--util"), findField("gpu_mem_util"));
        QCOMPARE(findField("util"), findField("--gpu-mem-util"));
    }

    // A version-1 file (as kvscope 0.1 wrote it, "util" and all) still loads, and says once
    // on stderr that the key is deprecated.
    void oldSessionFileLoads() {
        const std::string v1 = R"({
  "batch": 4,
  "block_size": 32,
  "context": 16384,
  "dcp": 1,
  "gpu": "h200",
  "kv_dtype": "fp8",
  "kvscope_session": 1,
  "max_num_batched_tokens": 8192,
  "model": "llama-3-70b",
  "pool_model": "datasheet",
  "tp": 8,
  "util": 0.85,
  "weight_dtype": "auto"
})";
        std::vector<std::string> lines;
        auto previous = setDeprecationSink([&](const std::string& l) { lines.push_back(l); });
        auto s = parseSession(v1);
        setDeprecationSink(previous);
        QVERIFY2(s.ok(), s.ok() ? "" : s.error().message().c_str());
        QCOMPARE(s->deployment.gpuMemUtil, 0.85);
        QCOMPARE(s->deployment.blockSize, std::int64_t(32));
        QVERIFY(s->deployment.kvDtype == KvDtype::FP8);
        QCOMPARE(s->gpu, std::string("h200"));
        QCOMPARE(lines.size(), std::size_t(1));
        QVERIFY(QString::fromStdString(lines[0]).contains(QLatin1String("util")));
        QVERIFY(QString::fromStdString(lines[0]).contains(QLatin1String("gpu_mem_util")));
        QVERIFY(!QString::fromStdString(lines[0]).contains(QLatin1Char('\n')));
        // Saved again, it is a current file with the one name.
        const std::string now = sessionToJson(s.value());
        QVERIFY(now.find("\"gpu_mem_util\": 0.85") != std::string::npos);
        QVERIFY(now.find("\"util\"") == std::string::npos);
        QVERIFY(now.find("\"kvscope_session\": 2") != std::string::npos);
    }

    // The custom GPU's optional figures (fp8 peak, driver memory) survive a session.
    void customGpuKeepsEveryFigure() {
        Session s;
        GpuSpec g = loadGpu("h100-sxm").value();
        g.id = "custom";
        g.name = "H100 with more memory";
        g.driverMemoryBytes = 85'000'000'000;
        g.peakFp8FlopPerS = 1979e12;
        s.customGpu = g;
        auto back = parseSession(sessionToJson(s));
        QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
        QVERIFY(back->customGpu.has_value());
        QCOMPARE(back->customGpu->peakFp8FlopPerS, g.peakFp8FlopPerS);
        QVERIFY(std::abs(back->customGpu->driverMemoryBytes - g.driverMemoryBytes) <= 1);
        QCOMPARE(back->customGpu->gpusPerNode, g.gpusPerNode);
        QCOMPARE(back->customGpu->name, g.name);
    }

    void fileRoundTrip() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.filePath(QStringLiteral("s.kvscope.json")).toStdString();
        Session s;
        s.deployment.tp = 4;
        s.deployment.kvHeads = 8;
        QVERIFY(saveSessionFile(s, path).ok());
        auto back = loadSessionFile(path);
        QVERIFY2(back.ok(), back.ok() ? "" : back.error().message().c_str());
        QVERIFY(sameDeployment(back->deployment, s.deployment));
        QVERIFY(!loadSessionFile(path + ".missing").ok());
        QVERIFY(
            !saveSessionFile(s, dir.filePath(QStringLiteral("no/such/dir/x.json")).toStdString())
                 .ok());
    }

    void errors_data() {
        QTest::addColumn<QString>("json");
        QTest::addColumn<QString>("prefix");
        QTest::newRow("not json") << "{"
                                  << "session: ";
        QTest::newRow("no version") << R"({"model": "llama-3-8b"})"
                                    << "kvscope_session: missing";
        QTest::newRow("newer version") << R"({"kvscope_session": 99})"
                                       << "kvscope_session: ";
        QTest::newRow("tp as string") << R"({"kvscope_session": 1, "tp": "8"})"
                                      << "tp: must be a positive integer";
        QTest::newRow("negative context") << R"({"kvscope_session": 1, "context": -1})"
                                          << "context: must be a positive integer";
        QTest::newRow("util above one") << R"({"kvscope_session": 1, "util": 1.2})"
                                        << "util: must be a number in (0, 1]";
        QTest::newRow("unknown key") << R"({"kvscope_session": 1, "colour": "red"})"
                                     << "colour: unknown field";
        QTest::newRow("bad kv dtype") << R"({"kvscope_session": 1, "kv_dtype": "int2"})"
                                      << "kv_dtype: ";
        QTest::newRow("bad pool model") << R"({"kvscope_session": 1, "pool_model": "magic"})"
                                        << "pool_model: ";
        QTest::newRow("custom gpu without bandwidth")
            << R"({"kvscope_session": 1, "gpu": {"memory_gb": 80, "bf16_tflops": 1, "fp32_tflops": 1}})"
            << "gpu.bandwidth_tb_s: ";
        QTest::newRow("h_kv word") << R"({"kvscope_session": 1, "h_kv": "many"})"
                                   << "h_kv: ";
    }
    void errors() {
        QFETCH(QString, json);
        QFETCH(QString, prefix);
        auto s = parseSession(json.toStdString());
        QVERIFY(!s.ok());
        const QString msg = QString::fromStdString(s.error().message());
        QVERIFY2(msg.startsWith(prefix), qPrintable(msg));
        QVERIFY(!msg.contains(QLatin1Char('\n')));
    }

    void resolveErrorsNameTheField() {
        Session s;
        s.model = "no-such-model";
        auto r = resolveSession(s);
        QVERIFY(!r.ok());
        QCOMPARE(QString::fromStdString(r.error().field), QStringLiteral("model"));
        Session t;
        t.deployment.tp = 3;
        auto q = resolveSession(t);
        QVERIFY(!q.ok());
        QCOMPARE(QString::fromStdString(q.error().field), QStringLiteral("tp"));
    }

    void huggingFaceCache() {
        QTemporaryDir home;
        QVERIFY(home.isValid());
        const QString hub = home.filePath(QStringLiteral("hf/hub"));
        const QByteArray config = R"({"model_type": "llama"})";
        writeFile(hub + QStringLiteral(
                            "/models--meta-llama--Meta-Llama-3-8B/snapshots/abc123/config.json"),
                  config);
        writeFile(hub + QStringLiteral("/models--gpt2/snapshots/def456/config.json"), config);
        // No config.json in this snapshot, and a dataset: both ignored.
        writeFile(hub + QStringLiteral("/models--org--empty/snapshots/000/tokenizer.json"), config);
        writeFile(hub + QStringLiteral("/datasets--org--data/snapshots/1/config.json"), config);

        auto found = findHuggingFaceConfigs(hub.toStdString());
        QCOMPARE(found.size(), std::size_t(2));
        QCOMPARE(QString::fromStdString(found[0].repoId), QStringLiteral("gpt2"));
        QCOMPARE(QString::fromStdString(found[1].repoId),
                 QStringLiteral("meta-llama/Meta-Llama-3-8B"));
        QVERIFY(QFile::exists(QString::fromStdString(found[1].path)));

        // $HF_HUB_CACHE first, then $HF_HOME/hub.
        const QByteArray oldHub = qgetenv("HF_HUB_CACHE"), oldHome = qgetenv("HF_HOME");
        qunsetenv("HF_HUB_CACHE");
        qputenv("HF_HOME", home.filePath(QStringLiteral("hf")).toUtf8());
        QCOMPARE(findHuggingFaceConfigs().size(), std::size_t(2));
        qputenv("HF_HUB_CACHE", home.filePath(QStringLiteral("nowhere")).toUtf8());
        QCOMPARE(findHuggingFaceConfigs().size(), std::size_t(0));
        qputenv("HF_HUB_CACHE", hub.toUtf8());
        QCOMPARE(QString::fromStdString(huggingFaceHubDir()), hub);
        QCOMPARE(findHuggingFaceConfigs().size(), std::size_t(2));
        if (oldHub.isNull())
            qunsetenv("HF_HUB_CACHE");
        else
            qputenv("HF_HUB_CACHE", oldHub);
        if (oldHome.isNull())
            qunsetenv("HF_HOME");
        else
            qputenv("HF_HOME", oldHome);
    }
};

QTEST_GUILESS_MAIN(TestSession)
#include "tst_session.moc"
