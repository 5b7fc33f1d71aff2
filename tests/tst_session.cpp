// Sessions: JSON round trip, one-line errors naming the field, and the Hugging Face cache scan.
#include "core/presets.h"
#include "core/session.h"

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
