// The planner: hand-computed cases, every returned option re-verified with evaluate, the
// reasons candidates fail, and `kvscope-cli plan`.
#include "cli_runner.h"
#include "core/features/plan.h"
#include "core/model/presets.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace kvscope;

namespace {

PlanRequest request(const char* model, std::int64_t context, std::int64_t concurrency,
                    std::vector<const char*> gpus, std::vector<KvDtype> kv) {
    PlanRequest r;
    r.model = loadModel(model).value();
    r.context = context;
    r.concurrency = concurrency;
    for (const char* g : gpus)
        r.gpus.push_back(loadGpu(g).value());
    r.kvDtypes = std::move(kv);
    r.base.poolModel = PoolModel::Datasheet;
    return r;
}

/// Independent of the planner: one replica at its share must fit, per evaluate.
void verifyEveryOption(const PlanRequest& req, const PlanResult& plan) {
    for (const auto& o : plan.options) {
        const GpuSpec gpu = loadGpu(o.gpu).value();
        Deployment d = req.base;
        d.tp = o.tp;
        d.kvDtype = parseKvDtype(o.kvDtypeResolved).value();
        d.context = req.context;
        d.batch = (req.concurrency + o.replicas - 1) / o.replicas;
        auto r = evaluate(req.model, gpu, d);
        QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
        QVERIFY(r->maxConcurrency >= d.batch);
        QVERIFY(r->maxConcurrency * o.replicas >= req.concurrency);
        QCOMPARE(o.gpus, o.tp * o.replicas);
        QVERIFY(verifyPlanOption(req, gpu, o).ok());
    }
    for (std::size_t i = 1; i < plan.options.size(); ++i)
        QVERIFY(!planOptionBefore(plan.options[i], plan.options[i - 1]));
}

} // namespace

class TestPlan : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void handComputed_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("context");
        QTest::addColumn<int>("concurrency");
        QTest::addColumn<QString>("kv");
        QTest::addColumn<int>("bestGpus");
        QTest::addColumn<int>("bestTp");
        QTest::addColumn<int>("bestReplicas");
        QTest::addColumn<int>("bestMaxConcurrency");
        // P = 0.9 · 80e9 − 141.1e9 / 8 = 54.36e9 B; 54.36e9 / (8192 · 40,960 B) = 162.01.
        QTest::newRow("llama3-70b 8k 162 h100 bf16: tp8 fits exactly")
            << "llama-3-70b" << 8192 << 162 << "bf16" << 8 << 8 << 1 << 162;
        // 163 does not fit at TP=8: 16 GPUs, two TP=8 replicas (324) beat TP=16 (188) on headroom.
        QTest::newRow("llama3-70b 8k 163 h100 bf16: 16 gpus")
            << "llama-3-70b" << 8192 << 163 << "bf16" << 16 << 8 << 2 << 324;
        // fp8 halves the cell: TP=8 holds 324 requests on the same 8 GPUs.
        QTest::newRow("llama3-70b 8k 163 h100 fp8: back to 8 gpus")
            << "llama-3-70b" << 8192 << 163 << "fp8" << 8 << 8 << 1 << 324;
        // Llama-3-8B on one H100: P = 72e9 − 16.06e9 = 55.94e9; / (8192 · 131,072) = 52.
        QTest::newRow("llama3-8b 8k 52 h100 bf16: one gpu")
            << "llama-3-8b" << 8192 << 52 << "bf16" << 1 << 1 << 1 << 52;
        QTest::newRow("llama3-8b 8k 53 h100 bf16: two gpus")
            << "llama-3-8b" << 8192 << 53 << "bf16" << 2 << 2 << 1 << 0;
    }
    void handComputed() {
        QFETCH(QString, model);
        QFETCH(int, context);
        QFETCH(int, concurrency);
        QFETCH(QString, kv);
        QFETCH(int, bestGpus);
        QFETCH(int, bestTp);
        QFETCH(int, bestReplicas);
        QFETCH(int, bestMaxConcurrency);
        auto req = request(model.toUtf8().constData(), context, concurrency, {"h100-sxm"},
                           {parseKvDtype(kv.toStdString()).value()});
        auto plan = planDeployment(req);
        QVERIFY2(plan.ok(), plan.ok() ? "" : plan.error().message().c_str());
        QVERIFY(!plan->options.empty());
        const PlanOption& best = plan->options.front();
        QCOMPARE(int(best.gpus), bestGpus);
        QCOMPARE(int(best.tp), bestTp);
        QCOMPARE(int(best.replicas), bestReplicas);
        if (bestMaxConcurrency > 0)
            QCOMPARE(int(best.maxConcurrency), bestMaxConcurrency);
        verifyEveryOption(req, plan.value());
    }

    void tp8DoesNotHold163() {
        auto req = request("llama-3-70b", 8192, 163, {"h100-sxm"}, {KvDtype::BF16});
        auto plan = planDeployment(req);
        QVERIFY(plan.ok());
        for (const auto& o : plan->options)
            QVERIFY(!(o.tp == 8 && o.replicas == 1));
    }

    void reasons_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("context");
        QTest::addColumn<int>("tp");
        QTest::addColumn<QString>("reason");
        // 71 query heads: TP=2 breaks h % TP == 0.
        QTest::newRow("falcon-7b tp2 invalid") << "falcon-7b" << 2048 << 2 << "invalid-tp";
        // 671B parameters on one 80 GB card.
        QTest::newRow("deepseek-v3 tp8 weights")
            << "deepseek-v3" << 8192 << 8 << "weights-dont-fit";
        // 2M tokens × 40,960 B = 81.9 GB per rank > the pool.
        QTest::newRow("llama3-70b 2M context tokens")
            << "llama-3-70b" << 2000000 << 8 << "too-few-tokens";
    }
    void reasons() {
        QFETCH(QString, model);
        QFETCH(int, context);
        QFETCH(int, tp);
        QFETCH(QString, reason);
        auto req = request(model.toUtf8().constData(), context, 1, {"h100-sxm"}, {KvDtype::Auto});
        auto plan = planDeployment(req);
        QVERIFY(plan.ok());
        bool found = false;
        for (const auto& r : plan->rejections)
            if (r.tp == tp) {
                QCOMPARE(QString::fromStdString(r.reason), reason);
                QVERIFY(!r.detail.empty());
                found = true;
            }
        QVERIFY(found);
        for (const auto& o : plan->options)
            QVERIFY(o.tp != tp);
        verifyEveryOption(req, plan.value());
    }

    void allPresetGpusDefault() {
        PlanRequest req;
        req.model = loadModel("llama-3-70b").value();
        req.context = 8192;
        req.concurrency = 100;
        auto plan = planDeployment(req);
        QVERIFY(plan.ok());
        QCOMPARE(plan->request.gpus.size(), gpuPresets().size());
        QCOMPARE(plan->request.kvDtypes.size(), std::size_t(2)); // auto + fp8
        QVERIFY(!plan->options.empty());
        verifyEveryOption(plan->request, plan.value());
        QCOMPARE(defaultPlanKvDtypes(loadModel("deepseek-v3").value()).size(), std::size_t(3));
    }

    void badRequests_data() {
        QTest::addColumn<int>("context");
        QTest::addColumn<int>("concurrency");
        QTest::addColumn<QString>("field");
        QTest::newRow("zero context") << 0 << 1 << "context";
        QTest::newRow("zero concurrency") << 8192 << 0 << "concurrency";
    }
    void badRequests() {
        QFETCH(int, context);
        QFETCH(int, concurrency);
        QFETCH(QString, field);
        auto plan = planDeployment(request("llama-3-8b", context, concurrency, {"h100-sxm"}, {}));
        QVERIFY(!plan.ok());
        QCOMPARE(QString::fromStdString(plan.error().field), field);
    }

    void cli_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("needle");
        const QStringList base{QStringLiteral("plan"), QStringLiteral("--model"),
                               QStringLiteral("llama-3-70b"), QStringLiteral("--context"),
                               QStringLiteral("8192")};
        QTest::newRow("json 162")
            << base + QStringList{QStringLiteral("--concurrency"), QStringLiteral("162"),
                                  QStringLiteral("--gpus"),        QStringLiteral("h100-sxm,h200"),
                                  QStringLiteral("--kv-dtypes"),   QStringLiteral("auto,fp8"),
                                  QStringLiteral("--pool-model"),  QStringLiteral("datasheet"),
                                  QStringLiteral("--json")}
            << 0 << "options";
        QTest::newRow("csv") << base + QStringList{QStringLiteral("--concurrency"),
                                                   QStringLiteral("10"), QStringLiteral("--csv")}
                             << 0 << "rank,gpu,tp";
        QTest::newRow("markdown") << base + QStringList{QStringLiteral("--concurrency"),
                                                        QStringLiteral("10"),
                                                        QStringLiteral("--markdown")}
                                  << 0 << "| # | GPU";
        QTest::newRow("missing concurrency") << base << 2 << "--concurrency";
        QTest::newRow("bad context") << QStringList{QStringLiteral("plan"),
                                                    QStringLiteral("--model"),
                                                    QStringLiteral("llama-3-70b"),
                                                    QStringLiteral("--context"),
                                                    QStringLiteral("8k"),
                                                    QStringLiteral("--concurrency"),
                                                    QStringLiteral("1")}
                                     << 2 << "--context";
        QTest::newRow("unknown gpu")
            << base + QStringList{QStringLiteral("--concurrency"), QStringLiteral("1"),
                                  QStringLiteral("--gpus"), QStringLiteral("h100-sxm,h900")}
            << 2 << "--gpus";
        QTest::newRow("bad kv dtype")
            << base + QStringList{QStringLiteral("--concurrency"), QStringLiteral("1"),
                                  QStringLiteral("--kv-dtypes"), QStringLiteral("int3")}
            << 2 << "--kv-dtypes";
        QTest::newRow("two formats")
            << base + QStringList{QStringLiteral("--concurrency"), QStringLiteral("1"),
                                  QStringLiteral("--json"), QStringLiteral("--csv")}
            << 2 << "choose one";
        QTest::newRow("zero concurrency")
            << base + QStringList{QStringLiteral("--concurrency"), QStringLiteral("0")} << 2
            << "--concurrency";
    }
    void cli() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, needle);
        const CliRun run = runCli(args);
        const QString& out = run.out;
        QVERIFY(run.finished);
        QCOMPARE(run.exitCode, exitCode);
        if (exitCode != 0) {
            KVSCOPE_VERIFY_ONE_LINE_ERROR(run, needle);
            return;
        }
        QVERIFY2(out.contains(needle), qPrintable(out.left(400)));
        if (!args.contains(QStringLiteral("--json")))
            return;
        // Every JSON option must fit when re-evaluated with the core, and be sorted.
        const auto options =
            QJsonDocument::fromJson(out.toUtf8()).object()[QStringLiteral("options")].toArray();
        QVERIFY(!options.isEmpty());
        const auto model = loadModel("llama-3-70b").value();
        std::int64_t previousGpus = 0;
        for (const auto& v : options) {
            const auto o = v.toObject();
            Deployment d;
            d.poolModel = PoolModel::Datasheet;
            d.tp = o[QStringLiteral("tp")].toInteger();
            d.kvDtype =
                parseKvDtype(o[QStringLiteral("kv_dtype")].toString().toStdString()).value();
            d.context = 8192;
            const std::int64_t replicas = o[QStringLiteral("replicas")].toInteger();
            d.batch = (162 + replicas - 1) / replicas;
            auto r = evaluate(
                model, loadGpu(o[QStringLiteral("gpu")].toString().toStdString()).value(), d);
            QVERIFY(r.ok());
            QVERIFY(r->maxConcurrency >= d.batch);
            QCOMPARE(o[QStringLiteral("gpus")].toInteger(), d.tp * replicas);
            QCOMPARE(o[QStringLiteral("max_concurrency")].toInteger(),
                     r->maxConcurrency * replicas);
            QVERIFY(o[QStringLiteral("gpus")].toInteger() >= previousGpus);
            previousGpus = o[QStringLiteral("gpus")].toInteger();
        }
    }
};

QTEST_GUILESS_MAIN(TestPlan)
#include "tst_plan.moc"
