// The explorer's physics (core/features/explore.h): the chapter's §6 comparison at a fixed pool
// (docs/formulas.md §7: P = 40 GiB, TP = 8: Llama-3-70B GQA-8 1,048,576 tokens vs DeepSeek-V3's
// latent 611,191; crossover min(TP, h_kv) = 4.66) from either side, its reading in words, the
// 40 GiB fallback, and the choices each control offers on presets and 2026 fixture configs.
#include "core/features/explore.h"
#include "core/model/presets.h"
#include "core/model/weights.h"

#include <QtTest/QtTest>

using namespace kvscope;

namespace {

ModelSpec model(const QString& ref) {
    const std::string r = ref.endsWith(QLatin1String(".json"))
                              ? std::string(KVSCOPE_FIXTURES_2026_DIR) + "/" + ref.toStdString()
                              : ref.toStdString();
    auto m = ref.endsWith(QLatin1String(".json")) ? loadModelSnapshot(r) : loadModel(r);
    if (!m.ok())
        qFatal("model %s: %s", r.c_str(), m.error().message().c_str());
    return m.value();
}

GpuSpec gpu(const char* id) {
    auto g = loadGpu(id);
    if (!g.ok())
        qFatal("gpu %s: %s", id, g.error().message().c_str());
    return g.value();
}

const TpPoint* at(const TpSeries& s, std::int64_t tp) {
    for (const TpPoint& p : s.points)
        if (p.tp == tp)
            return &p;
    return nullptr;
}

QList<qint64> list(const std::vector<std::int64_t>& v) {
    return QList<qint64>(v.begin(), v.end());
}

} // namespace

class TestExplore : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // §7's fixed-pool row from either side: the GQA model against the MLA reference's latent,
    // and the MLA model against the GQA reference.
    void tpComparisonAtFixedPool_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QString>("primaryLabel");
        QTest::addColumn<QString>("counterpartLabel");
        QTest::addColumn<qint64>("primaryTokensAtTp8");
        QTest::addColumn<qint64>("counterpartTokensAtTp8");
        QTest::newRow("llama-3-70b vs deepseek-v3 latent")
            << "llama-3-70b"
            << "Llama-3-70B GQA-8"
            << "DeepSeek-V3 MLA latent" << qint64(1'048'576) << qint64(611'191);
        QTest::newRow("deepseek-v3 latent vs llama-3-70b")
            << "deepseek-v3"
            << "DeepSeek-V3 MLA latent"
            << "Llama-3-70B GQA-8" << qint64(611'191) << qint64(1'048'576);
    }
    void tpComparisonAtFixedPool() {
        QFETCH(QString, model);
        QFETCH(QString, primaryLabel);
        QFETCH(QString, counterpartLabel);
        QFETCH(qint64, primaryTokensAtTp8);
        QFETCH(qint64, counterpartTokensAtTp8);
        const ModelSpec m = ::model(model);
        const ModelSpec mlaRef = ::model(QLatin1String(kMlaReferenceModelId));
        const ModelSpec gqaRef = ::model(QLatin1String(kDefaultModelId));
        const GpuSpec g = gpu("h100-sxm");
        Deployment d;
        d.tp = 8;
        d.poolGiB = 40;
        auto r = evaluate(m, g, d);
        QVERIFY(r.ok());
        const TpData t = computeTpSeries(m, g, d, r.value(), &mlaRef, &gqaRef);
        QCOMPARE(t.poolGiBPerRank, 40.0);
        QCOMPARE(t.currentTp, qint64(8));
        QCOMPARE(QString::fromStdString(t.primary.label), primaryLabel);
        QVERIFY(t.counterpart.has_value());
        QCOMPARE(QString::fromStdString(t.counterpart->label), counterpartLabel);
        QVERIFY(at(t.primary, 8) && at(*t.counterpart, 8));
        QCOMPARE(at(t.primary, 8)->tokens, primaryTokensAtTp8);
        QCOMPARE(at(*t.counterpart, 8)->tokens, counterpartTokensAtTp8);
        // 320 KiB / 68.6 KiB per token (§7): GQA overtakes the latent past TP = 4.66.
        QVERIFY(t.crossoverTp.has_value());
        QCOMPARE(QString::number(*t.crossoverTp, 'f', 2), QStringLiteral("4.66"));
        QCOMPARE(QString::fromStdString(t.crossoverText), QStringLiteral("crossover at TP = 4.66"));
        // The latent is flat in TP at a fixed pool; GQA-8 grows until its heads replicate.
        const TpSeries& gqa = t.primary.mla ? *t.counterpart : t.primary;
        const TpSeries& mla = t.primary.mla ? t.primary : *t.counterpart;
        QCOMPARE(at(mla, 1)->tokens, at(mla, 64)->tokens);
        QCOMPARE(at(gqa, 8)->tokens, 8 * at(gqa, 1)->tokens);
        QCOMPARE(at(gqa, 16)->tokens, at(gqa, 8)->tokens);
        QVERIFY(at(gqa, 16)->replicated && !at(gqa, 8)->replicated);
    }

    // The crossover read in words: inside 1 … h_kv a TP, else which side wins everywhere.
    void crossoverReading_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("kvHeads"); // 0: the model's own
        QTest::addColumn<double>("ratio");
        QTest::addColumn<bool>("hasTp");
        QTest::addColumn<QString>("text");
        // Llama-3.1-405B as MQA: 126 layers × 2 × 128 × 2 B = 64,512 B per token against the
        // latent's 61 × 576 × 2 B = 70,272 B: MQA is smaller, it holds more at every TP.
        QTest::newRow("llama-3.1-405b mqa") << "llama-3.1-405b" << 1 << 64512.0 / 70272.0 << false
                                            << "MQA holds more than MLA at every TP";
        // GQA-16 of Llama-3-70B: 640 KiB per token, 9.33× the latent, but only 16 KV heads...
        QTest::newRow("llama-3-70b gqa16")
            << "llama-3-70b" << 16 << 655360.0 / 70272.0 << true << "crossover at TP = 9.33";
        // ... and MHA on Llama-3-8B (32 heads, 32 layers: 512 KiB) stays inside its 32 heads.
        QTest::newRow("llama-3-8b mha")
            << "llama-3-8b" << 32 << 524288.0 / 70272.0 << true << "crossover at TP = 7.46";
        // GQA-2 of Llama-3-70B: 80 KiB, 1.17× the latent: below h_kv = 2, so a crossover.
        QTest::newRow("llama-3-70b gqa2")
            << "llama-3-70b" << 2 << 81920.0 / 70272.0 << true << "crossover at TP = 1.17";
        // Gemma-3-27B keeps GQA-16 over 62 layers of 128-wide heads: 62 × 2 × 16 × 128 × 2 B
        // = 507,904 B, 7.23× the latent, within its 16 KV heads.
        QTest::newRow("gemma-3-27b fixture")
            << "google__gemma-3-27b-it.json" << 0 << 507904.0 / 70272.0 << true
            << "crossover at TP = 7.23";
    }
    void crossoverReading() {
        QFETCH(QString, model);
        QFETCH(int, kvHeads);
        QFETCH(double, ratio);
        QFETCH(bool, hasTp);
        QFETCH(QString, text);
        const ModelSpec m = ::model(model);
        const ModelSpec mlaRef = ::model(QLatin1String(kMlaReferenceModelId));
        const GpuSpec g = gpu("h200");
        Deployment d;
        d.poolGiB = kComparisonPoolGiB;
        if (kvHeads > 0)
            d.kvHeads = kvHeads;
        d = fitDeployment(m, g, d);
        auto r = evaluate(m, g, d);
        QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
        const TpData t = computeTpSeries(m, g, d, r.value(), &mlaRef);
        QVERIFY(t.counterpart.has_value());
        const auto c = readCrossover(t.primary, *t.counterpart);
        QVERIFY(c.has_value());
        QVERIFY2(qFuzzyCompare(c->ratio, ratio), qPrintable(QString::number(c->ratio, 'f', 6)));
        QCOMPARE(c->crossoverTp.has_value(), hasTp);
        QCOMPARE(QString::fromStdString(c->text), text);
        QCOMPARE(t.crossoverTp, c->crossoverTp);
        // Two GQA series have no crossover: only GQA against MLA is read.
        QVERIFY(!readCrossover(t.primary, t.primary));
    }

    // A deployment that leaves no pool (DeepSeek-V3's 671B on one H100) is compared at the
    // chapter's 40 GiB.
    void emptyPoolFallsBackToTheChaptersPool() {
        const ModelSpec m = model(QStringLiteral("deepseek-v3"));
        const ModelSpec gqaRef = model(QLatin1String(kDefaultModelId));
        const GpuSpec g = gpu("h100-sxm");
        Deployment d;
        auto r = evaluate(m, g, d);
        QVERIFY(r.ok());
        QVERIFY(r->pool.poolBytes <= 0);
        const TpData t = computeTpSeries(m, g, d, r.value(), nullptr, &gqaRef);
        QCOMPARE(t.poolGiBPerRank, kComparisonPoolGiB);
        QVERIFY(!t.primary.points.empty());
        // At 40 GiB and TP 8 the latent holds §7's 611,191 tokens.
        QCOMPARE(at(t.primary, 8)->tokens, qint64(611'191));
    }

    // The h_kv and TP choices: every divisor of h (the latent last for MLA), and TP sizes that
    // divide h, on presets and on the 2026 fixture configs.
    void controlChoices_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<QList<qint64>>("kvHeads");
        QTest::addColumn<bool>("latent");
        QTest::addColumn<QList<qint64>>("tpAtOwnKv");
        QTest::newRow("llama-3-70b") << "llama-3-70b" << QList<qint64>{64, 32, 16, 8, 4, 2, 1}
                                     << false << QList<qint64>{1, 2, 4, 8, 16, 32, 64};
        QTest::newRow("deepseek-v3") << "deepseek-v3" << QList<qint64>{128, 64, 32, 16, 8, 4, 2, 1}
                                     << true << QList<qint64>{1, 2, 4, 8, 16, 32, 64, 128};
        QTest::newRow("nemotron-h-56b fixture")
            << "nvidia__Nemotron-H-56B-Base-8K.json" << QList<qint64>{64, 32, 16, 8, 4, 2, 1}
            << false << QList<qint64>{1, 2, 4, 8, 16, 32, 64};
        QTest::newRow("gemma-3-27b fixture")
            << "google__gemma-3-27b-it.json" << QList<qint64>{32, 16, 8, 4, 2, 1} << false
            << QList<qint64>{1, 2, 4, 8, 16, 32};
        QTest::newRow("gpt-oss-20b fixture")
            << "openai__gpt-oss-20b.json" << QList<qint64>{64, 32, 16, 8, 4, 2, 1} << false
            << QList<qint64>{1, 2, 4, 8, 16, 32, 64};
    }
    void controlChoices() {
        QFETCH(QString, model);
        QFETCH(QList<qint64>, kvHeads);
        QFETCH(bool, latent);
        QFETCH(QList<qint64>, tpAtOwnKv);
        const ModelSpec m = ::model(model);
        const auto kv = kvHeadChoices(m);
        QList<qint64> heads;
        for (const auto& k : kv)
            if (k)
                heads << *k;
        QCOMPARE(heads, kvHeads);
        QCOMPARE(!kv.empty() && !kv.back().has_value(), latent);
        QCOMPARE(list(tpChoices(m, std::nullopt)), tpAtOwnKv);
        // The labels follow the GQA paper's names: MHA first, MQA last.
        QCOMPARE(QString::fromStdString(kvChoiceLabel(m, kv.front())), QStringLiteral("MHA"));
        QCOMPARE(QString::fromStdString(kvChoiceLabel(m, latent ? kv[kv.size() - 2] : kv.back())),
                 QStringLiteral("MQA"));
    }

    // DCP and KV dtype choices validate: DCP divides TP, and for GQA only once TP > h_kv
    // (vLLM's rule: Llama-3-70B at TP 8 = h_kv has none); fp8_ds_mla only for an MLA latent.
    void dcpAndDtypeChoices_data() {
        QTest::addColumn<QString>("model");
        QTest::addColumn<qint64>("tp");
        QTest::addColumn<QList<qint64>>("dcp");
        QTest::addColumn<bool>("dsMla");
        QTest::newRow("llama-3-70b tp8") << "llama-3-70b" << qint64(8) << QList<qint64>{1} << false;
        QTest::newRow("deepseek-v3 tp8")
            << "deepseek-v3" << qint64(8) << QList<qint64>{1, 2, 4, 8} << true;
    }
    void dcpAndDtypeChoices() {
        QFETCH(QString, model);
        QFETCH(qint64, tp);
        QFETCH(QList<qint64>, dcp);
        QFETCH(bool, dsMla);
        const ModelSpec m = ::model(model);
        const GpuSpec g = gpu("h200");
        Deployment d;
        d.tp = tp;
        QCOMPARE(list(dcpChoices(m, g, d)), dcp);
        for (std::int64_t x : dcpChoices(m, g, d)) {
            Deployment t = d;
            t.dcp = x;
            QVERIFY(validate(m, g, t).ok());
        }
        const auto dtypes = kvDtypeChoices(m, g, d);
        QCOMPARE(std::find(dtypes.begin(), dtypes.end(), KvDtype::FP8DsMla) != dtypes.end(), dsMla);
        QVERIFY(std::find(dtypes.begin(), dtypes.end(), KvDtype::FP8) != dtypes.end());
    }

    // A deployment carried onto another model keeps what still validates.
    void fitDeploymentKeepsWhatValidates_data() {
        QTest::addColumn<QString>("from");
        QTest::addColumn<QString>("to");
        QTest::addColumn<qint64>("tp");
        QTest::addColumn<int>("kvHeads"); // 0: none
        QTest::addColumn<bool>("dsMla");
        QTest::addColumn<qint64>("fitTp");
        QTest::addColumn<int>("fitKvHeads"); // 0: the model's own
        QTest::addColumn<bool>("fitDsMla");
        // DeepSeek-V3 at TP 128 onto Llama-3-70B (64 heads): TP falls to 64, fp8_ds_mla to auto.
        QTest::newRow("deepseek-v3 tp128 to llama-3-70b")
            << "deepseek-v3"
            << "llama-3-70b" << qint64(128) << 0 << true << qint64(64) << 0 << false;
        // GQA-4 of Llama-3-70B onto Gemma-3-27B (32 heads: 4 divides them) is kept, TP 16 too.
        QTest::newRow("llama-3-70b gqa4 to gemma-3-27b")
            << "llama-3-70b"
            << "google__gemma-3-27b-it.json" << qint64(16) << 4 << false << qint64(16) << 4
            << false;
        // Llama-3-70B's own h_kv asked for explicitly is no what-if: it is dropped.
        QTest::newRow("llama-3-70b own h_kv")
            << "llama-3-70b"
            << "llama-3-70b" << qint64(8) << 8 << false << qint64(8) << 0 << false;
        // The latent's fp8_ds_mla stays on the MLA model.
        QTest::newRow("deepseek-v3 to itself")
            << "deepseek-v3"
            << "deepseek-v3" << qint64(8) << 0 << true << qint64(8) << 0 << true;
    }
    void fitDeploymentKeepsWhatValidates() {
        QFETCH(QString, from);
        QFETCH(QString, to);
        QFETCH(qint64, tp);
        QFETCH(int, kvHeads);
        QFETCH(bool, dsMla);
        QFETCH(qint64, fitTp);
        QFETCH(int, fitKvHeads);
        QFETCH(bool, fitDsMla);
        Q_UNUSED(from);
        const ModelSpec m = model(to);
        const GpuSpec g = gpu("h200");
        Deployment d;
        d.tp = tp;
        if (kvHeads > 0)
            d.kvHeads = kvHeads;
        if (dsMla)
            d.kvDtype = KvDtype::FP8DsMla;
        const Deployment f = fitDeployment(m, g, d);
        QVERIFY(validate(m, g, f).ok());
        QCOMPARE(f.tp, fitTp);
        QCOMPARE(f.kvHeads.value_or(0), std::int64_t(fitKvHeads));
        QCOMPARE(f.kvDtype == KvDtype::FP8DsMla, fitDsMla);
    }

    // A preset's display name is its title; a config file's its own name.
    void displayNames() {
        QCOMPARE(QString::fromStdString(
                     modelDisplayName("llama-3-70b", model(QStringLiteral("llama-3-70b")))),
                 QStringLiteral("Llama-3-70B"));
        const ModelSpec gemma = model(QStringLiteral("google__gemma-3-27b-it.json"));
        QCOMPARE(modelDisplayName("/x/google__gemma-3-27b-it.json", gemma), gemma.name);
    }
};

QTEST_APPLESS_MAIN(TestExplore)
#include "tst_explore.moc"
