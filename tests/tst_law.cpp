// docs/formulas.md §7, row by row, and the rest of the law (pools, weights, the sweep); the
// validation rules are tst_law_validation.cpp.
#include "core/format.h"
#include "core/law/law.h"
#include "core/model/presets.h"
#include "testutils.h"

#include <QtTest/QtTest>
#include <cmath>

using namespace kvscope;
using namespace kvscope::test;

namespace {

Deployment dep(std::int64_t tp, std::optional<std::int64_t> hkv = std::nullopt) {
    Deployment d;
    d.tp = tp;
    d.kvHeads = hkv;
    d.context = 8192;
    return d;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

} // namespace

class TestLaw : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // --- §7: the chapter's numbers -----------------------------------------------------------
    void cellBytes_data();
    void cellBytes();
    void chapterConcurrency_data();
    void chapterConcurrency();
    void ridgeAndIntensity();
    void kvProjectionWeights();
    void deepseekCellAtAnyTp_data();
    void deepseekCellAtAnyTp();
    void deepseekFp8DsMla();
    void mlaIntensity_data();
    void mlaIntensity();
    void fixedPoolMlaLoses();
    void crossover();
    void vllmPage();
    void llama8bReplicatesPastTp8();
    void intensityTpInvariantUntilReplication();
    void gqaPaperTable();
    // --- more of the law -------------------------------------------------------------------
    void dcpDividesContext();
    void windowLayersCapRequestBytes();
    void vllmPoolBreakdown();
    void vllmPoolMatchesVllmLogs_data();
    void vllmPoolMatchesVllmLogs();
    void poolOverride();
    void weightsDoNotFit();
    void weightFp8KeepsEmbeddings16Bit();
    void decodeStepTraffic();
    void sweepCoversEveryVariant();
    void humanUnits_data();
    void humanUnits();
};

void TestLaw::cellBytes_data() {
    QTest::addColumn<QString>("modelId");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("hkv"); // 0 = the model's own
    QTest::addColumn<qint64>("cell");
    QTest::addColumn<qint64>("cellPerRank");
    QTest::addColumn<qint64>("requestBytes8k");
    QTest::addColumn<int>("kvPerRank");
    // Llama-3-70B as MHA: 2.5 MiB/token, 20 GiB per 8,192-token conversation.
    QTest::newRow("llama3-70b mha tp1") << "llama-3-70b" << 1 << 64 << 2'621'440LL << 2'621'440LL
                                        << 20LL * 1024 * 1024 * 1024 << 64;
    // As shipped (GQA-8): 320 KiB/token, 2.5 GiB at 8k.
    QTest::newRow("llama3-70b gqa8 tp1")
        << "llama-3-70b" << 1 << 0 << 327'680LL << 327'680LL << 2'684'354'560LL << 8;
    // At TP=8 GQA-8 and MQA alike: 40 KiB per token per rank, one KV head per rank.
    QTest::newRow("llama3-70b gqa8 tp8")
        << "llama-3-70b" << 8 << 0 << 327'680LL << 40'960LL << 2'684'354'560LL << 1;
    QTest::newRow("llama3-70b mqa tp8")
        << "llama-3-70b" << 8 << 1 << 40'960LL << 40'960LL << 335'544'320LL << 1;
    QTest::newRow("llama3-70b mha tp8")
        << "llama-3-70b" << 8 << 64 << 2'621'440LL << 327'680LL << 20LL * 1024 * 1024 * 1024 << 8;
}

void TestLaw::cellBytes() {
    QFETCH(QString, modelId);
    QFETCH(int, tp);
    QFETCH(int, hkv);
    QFETCH(qint64, cell);
    QFETCH(qint64, cellPerRank);
    QFETCH(qint64, requestBytes8k);
    QFETCH(int, kvPerRank);
    const auto m = model(modelId.toUtf8().constData());
    const auto r =
        eval(m, gpu("h100-sxm"), dep(tp, hkv ? std::optional<std::int64_t>(hkv) : std::nullopt));
    QCOMPARE(r.cellBytesPerToken, cell);
    QCOMPARE(r.cellBytesPerTokenPerRank, cellPerRank);
    QCOMPARE(r.requestBytes, requestBytes8k);
    QCOMPARE(r.kvHeadsPerRank, kvPerRank);
}

void TestLaw::chapterConcurrency_data() {
    QTest::addColumn<int>("hkv");
    QTest::addColumn<qint64>("concurrency");
    QTest::newRow("gqa8 162 requests") << 8 << 162LL;
    QTest::newRow("mha 20 requests") << 64 << 20LL;
    QTest::newRow("mqa same as gqa8 at tp8") << 1 << 162LL;
}

void TestLaw::chapterConcurrency() {
    QFETCH(int, hkv);
    QFETCH(qint64, concurrency);
    // 8×H100 80GB, util 0.9, datasheet pool: 0.9 × 80e9 − weights/8 ≈ 50.6 GiB per card.
    Deployment d = dep(8, hkv);
    d.poolModel = PoolModel::Datasheet;
    const auto r = eval(model("llama-3-70b"), gpu("h100-sxm"), d);
    QCOMPARE(r.pool.budgetBytes, 72'000'000'000LL);
    QCOMPARE(std::round(r.pool.poolBytes / kGiB * 10) / 10, 50.6);
    QCOMPARE(r.maxConcurrency, concurrency);
    // MHA is exactly one eighth of GQA-8 because its per-rank cell is eight times larger.
    QCOMPARE(r.tokensCapacity, r.pool.poolBytes / r.cellBytesPerTokenPerRank);
}

void TestLaw::ridgeAndIntensity() {
    const auto g = gpu("h100-sxm");
    QCOMPARE(g.peakBf16FlopPerS, 989.4e12);
    QCOMPARE(g.bandwidthBytesPerS, 3.35e12);
    const auto r = eval(model("llama-3-70b"), g, dep(8));
    QCOMPARE(std::lround(r.ridgeFlopPerByte), 295L);
    QCOMPARE(r.intensityFlopPerByte, 8.0);
    // 8 × 3.35e12 / 989.4e12 = 2.7% of bf16 peak.
    QCOMPARE(std::round(r.attainableFractionOfPeak * 1000) / 10, 2.7);
    QVERIFY(r.attainableFlopPerS < g.peakBf16FlopPerS);
}

void TestLaw::kvProjectionWeights() {
    const auto m = model("llama-3-70b");
    const auto mha = eval(m, gpu("h100-sxm"), dep(1, 64));
    const auto gqa = eval(m, gpu("h100-sxm"), dep(1));
    QCOMPARE(mha.kvProjParamsPerLayer, 134'217'728LL); // 134.2M
    QCOMPARE(gqa.kvProjParamsPerLayer, 16'777'216LL);  // 16.8M
    QCOMPARE(humanCount(134'217'728.0), std::string("134.2M"));
    QCOMPARE(humanCount(16'777'216.0), std::string("16.8M"));
    const std::int64_t saved = (mha.kvProjParamsPerLayer - gqa.kvProjParamsPerLayer) * 80;
    QCOMPARE(humanCount(static_cast<double>(saved)), std::string("9.40B"));
    QCOMPARE(humanBytes(static_cast<double>(saved) * 2), std::string("17.5 GiB"));
}

void TestLaw::deepseekCellAtAnyTp_data() {
    QTest::addColumn<int>("tp");
    QTest::newRow("deepseek-v3 tp1") << 1;
    QTest::newRow("deepseek-v3 tp8") << 8;
    QTest::newRow("deepseek-v3 tp16") << 16;
}

void TestLaw::deepseekCellAtAnyTp() {
    QFETCH(int, tp);
    const auto r = eval(model("deepseek-v3"), gpu("h100-sxm"), dep(tp));
    QCOMPARE(toString(r.attention), std::string("MLA"));
    QCOMPARE(r.cellBytesPerToken, 70'272LL); // 576 × 2 × 61
    QCOMPARE(r.cellBytesPerTokenPerRank, 70'272LL);
    QCOMPARE(humanBytes(70'272), std::string("68.6 KiB"));
    QCOMPARE(r.kvReplicated, tp > 1);
}

void TestLaw::deepseekFp8DsMla() {
    Deployment d = dep(8);
    d.kvDtype = KvDtype::FP8DsMla;
    const auto r = eval(model("deepseek-v3"), gpu("h100-sxm"), d);
    QCOMPARE(r.cellBytesPerToken, 40'016LL); // 656 · 61
    QCOMPARE(r.pageBytes, 656LL * 16);
}

void TestLaw::mlaIntensity_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<long>("intensity");
    QTest::newRow("deepseek-v3 tp1 242") << 1 << 242L;
    QTest::newRow("deepseek-v3 tp8 30") << 8 << 30L;
    QTest::newRow("deepseek-v3 tp16 15") << 16 << 15L;
}

void TestLaw::mlaIntensity() {
    QFETCH(int, tp);
    QFETCH(long, intensity);
    const auto r = eval(model("deepseek-v3"), gpu("h100-sxm"), dep(tp));
    QCOMPARE(std::lround(r.intensityFlopPerByte), intensity);
    if (tp == 1) // 82% of the way to the H100 ridge, still below it
        QCOMPARE(std::lround(100 * r.intensityFlopPerByte / r.ridgeFlopPerByte), 82L);
}

void TestLaw::fixedPoolMlaLoses() {
    Deployment d = dep(8);
    d.poolGiB = 40;
    const auto gqa = eval(model("llama-3-70b"), gpu("h100-sxm"), d);
    const auto mla = eval(model("deepseek-v3"), gpu("h100-sxm"), d);
    QCOMPARE(gqa.tokensCapacity, 1'048'576LL);
    QCOMPARE(mla.tokensCapacity, 611'191LL);
    QVERIFY(mla.tokensCapacity < gqa.tokensCapacity);
    // MLA's cell is 4.7× smaller and still loses at TP=8.
    QCOMPARE(std::round(10.0 * gqa.cellBytesPerToken / mla.cellBytesPerToken) / 10, 4.7);
}

void TestLaw::crossover() {
    const double x = capacityCrossover(327'680, 70'272);
    QCOMPARE(std::round(x * 100) / 100, 4.66);
    // At TP=4 GQA-8 still loses to MLA at a fixed pool, at TP=8 it wins.
    Deployment d = dep(4);
    d.poolGiB = 40;
    QVERIFY(eval(model("llama-3-70b"), gpu("h100-sxm"), d).tokensCapacity <
            eval(model("deepseek-v3"), gpu("h100-sxm"), d).tokensCapacity);
}

void TestLaw::vllmPage() {
    const auto r = eval(model("llama-3-70b"), gpu("h100-sxm"), dep(8));
    QCOMPARE(r.pageBytes, 8'192LL);
    QCOMPARE(r.pageBytes / 16 / r.kvHeadsPerRank, 512LL); // per token per head slot
    QCOMPARE(r.pageBytes / 16 * r.layers, r.cellBytesPerTokenPerRank);
    QCOMPARE(r.blocksPerRank, r.pool.poolBytes / (r.pageBytes * 80));
    QCOMPARE(r.vllmTokens, r.blocksPerRank * 16);
}

void TestLaw::llama8bReplicatesPastTp8() {
    const auto m = model("llama-3-8b");
    const auto tp8 = eval(m, gpu("h100-sxm"), dep(8));
    const auto tp16 = eval(m, gpu("h100-sxm"), dep(16));
    QVERIFY(!tp8.kvReplicated);
    QVERIFY(tp16.kvReplicated);
    QCOMPARE(tp16.kvCopies, 2LL);
    QCOMPARE(tp16.cellBytesPerTokenPerRank, tp8.cellBytesPerTokenPerRank); // stops shrinking
    const auto tp4 = eval(m, gpu("h100-sxm"), dep(4));
    QCOMPARE(tp4.cellBytesPerTokenPerRank, 2 * tp8.cellBytesPerTokenPerRank);
    // Token capacity grows far less than 2× from TP=8 to TP=16: only the weights shrink.
    Deployment d8 = dep(8), d16 = dep(16);
    d8.poolModel = d16.poolModel = PoolModel::Datasheet;
    const auto a = eval(m, gpu("h100-sxm"), d8), b = eval(m, gpu("h100-sxm"), d16);
    QVERIFY(b.tokensCapacity > a.tokensCapacity);
    QVERIFY(b.tokensCapacity < a.tokensCapacity * 11 / 10);
}

void TestLaw::intensityTpInvariantUntilReplication() {
    const auto m = model("llama-3-8b");
    for (int tp : {1, 2, 4, 8})
        QCOMPARE(eval(m, gpu("h100-sxm"), dep(tp)).intensityFlopPerByte, 4.0 * 2 / 2); // g = 4
    QCOMPARE(eval(m, gpu("h100-sxm"), dep(16)).intensityFlopPerByte, 2.0);
    Deployment fp8 = dep(1);
    fp8.kvDtype = KvDtype::FP8;
    QCOMPARE(eval(m, gpu("h100-sxm"), fp8).intensityFlopPerByte, 8.0); // 2g / b with b = 1
}

void TestLaw::gqaPaperTable() {
    // The GQA paper's T5-XXL comparison (Table 1) as the chapter quotes it: GQA-8 recovers
    // most of MQA's speed-up and nearly all of MHA's quality.
    struct Row {
        const char* name;
        double seconds, average;
    };
    const Row mha{"MHA-XXL", 1.51, 47.2}, mqa{"MQA-XXL", 0.24, 46.6}, gqa{"GQA-8-XXL", 0.28, 47.1};
    QVERIFY(mha.seconds / gqa.seconds > 5.0);
    QVERIFY(mha.average - gqa.average <= 0.1 + 1e-9);
    QVERIFY(gqa.average - mqa.average >= 0.5 - 1e-9);
}

void TestLaw::dcpDividesContext() {
    const auto m = model("llama-3-8b");
    Deployment d = dep(16);
    d.dcp = 2;
    d.context = 8193;
    const auto r = eval(m, gpu("h100-sxm"), d);
    QCOMPARE(r.contextPerRank, 4097LL);
    QCOMPARE(r.requestBytesPerRank, 4097LL * r.cellBytesPerTokenPerRank);
    Deployment one = d;
    one.dcp = 1;
    const auto r1 = eval(m, gpu("h100-sxm"), one);
    QCOMPARE(r.tokensCapacity, 2 * (r.pool.poolBytes / r.cellBytesPerTokenPerRank));
    QVERIFY(r.maxConcurrency >= 2 * r1.maxConcurrency - 1);
    // MLA has no TP > h_kv condition.
    Deployment mla = dep(8);
    mla.dcp = 8;
    QVERIFY(evaluate(model("deepseek-v3"), gpu("h200"), mla).ok());
}

void TestLaw::windowLayersCapRequestBytes() {
    const auto m = model("gemma-2-9b");
    QCOMPARE(m.windowLayerCount(), 21LL);
    Deployment d = dep(1);
    d.context = 32768;
    const auto r = eval(m, gpu("h100-sxm"), d);
    const std::int64_t perLayer = 8 * (256 + 256) * 2;
    QCOMPARE(r.cellBytesPerToken, 42 * perLayer);
    QCOMPARE(r.requestBytes, 21 * perLayer * 32768 + 21 * perLayer * 4096);
}

void TestLaw::vllmPoolBreakdown() {
    const auto r = eval(model("llama-3-70b"), gpu("h100-sxm"), dep(8));
    const PoolBreakdown& p = r.pool;
    QCOMPARE(toString(p.model), std::string("vllm"));
    QCOMPARE(std::round(p.capacityBytes / kGiB * 100) / 100, 79.19);
    QCOMPARE(p.budgetBytes, static_cast<std::int64_t>(0.9 * static_cast<double>(p.capacityBytes)));
    QCOMPARE(p.weightBytes, r.weightBytesPerRank);
    QVERIFY(p.activationPeakBytes > 0);
    QVERIFY(p.ncclBytes > 0);
    QVERIFY(p.customAllReduceBytes > 0);
    QCOMPARE(p.poolBytes, p.budgetBytes - p.weightBytes - p.activationPeakBytes - p.cudaGraphBytes -
                              p.ncclBytes - p.customAllReduceBytes - p.cudaContextBytes);
    // TP=1: no collective buffers.
    const auto single = eval(model("llama-3-8b"), gpu("h100-sxm"), dep(1));
    QCOMPARE(single.pool.ncclBytes, 0LL);
    QCOMPARE(single.pool.customAllReduceBytes, 0LL);
    // The activation peak grows with max_num_batched_tokens.
    Deployment big = dep(8);
    big.maxNumBatchedTokens = 32768;
    QVERIFY(eval(model("llama-3-70b"), gpu("h100-sxm"), big).pool.activationPeakBytes >
            p.activationPeakBytes);
}

void TestLaw::vllmPoolMatchesVllmLogs_data() {
    // "Available KV cache memory" as vLLM 0.11 logged it on an H100 (util 0.9, 8,192 batched
    // tokens): Llama-3.1-8B at TP=1, and Llama-3.3-70B FP8-dynamic (embeddings and lm_head in
    // 16-bit) at TP=2.
    QTest::addColumn<QString>("modelId");
    QTest::addColumn<int>("tp");
    QTest::addColumn<bool>("fp8Weights");
    QTest::addColumn<double>("loggedWeightsGiB");
    QTest::addColumn<double>("loggedPoolGiB");
    QTest::newRow("llama-3.1-8b tp1") << "llama-3-8b" << 1 << false << 14.99 << 51.38;
    QTest::newRow("llama-3.3-70b fp8 tp2") << "llama-3-70b" << 2 << true << 33.88 << 32.00;
}

void TestLaw::vllmPoolMatchesVllmLogs() {
    QFETCH(QString, modelId);
    QFETCH(int, tp);
    QFETCH(bool, fp8Weights);
    QFETCH(double, loggedWeightsGiB);
    QFETCH(double, loggedPoolGiB);
    Deployment d = dep(tp);
    d.engine = parseEngineSpec("vllm@0.11").value(); // the logs' release
    if (fp8Weights)
        d.weightDtype = WeightDtype::FP8;
    const auto r = eval(model(modelId.toUtf8().constData()), gpu("h100-sxm"), d);
    QVERIFY2(std::fabs(r.pool.weightBytes / kGiB - loggedWeightsGiB) / loggedWeightsGiB < 0.01,
             qPrintable(QString::number(r.pool.weightBytes / kGiB)));
    QVERIFY2(std::fabs(r.pool.poolBytes / kGiB - loggedPoolGiB) / loggedPoolGiB < 0.01,
             qPrintable(QString::number(r.pool.poolBytes / kGiB)));
}

void TestLaw::poolOverride() {
    Deployment d = dep(8);
    d.poolGiB = 40;
    const auto r = eval(model("llama-3-70b"), gpu("h100-sxm"), d);
    QVERIFY(r.pool.overridden);
    QCOMPARE(r.pool.poolBytes, 40LL * 1024 * 1024 * 1024);
}

void TestLaw::weightsDoNotFit() {
    const auto r = eval(model("llama-3-70b"), gpu("h100-sxm"), dep(1));
    QVERIFY(!r.fits);
    QCOMPARE(r.tokensCapacity, 0LL);
    QCOMPARE(r.maxConcurrency, 0LL);
    QVERIFY(QString::fromStdString(r.noFitReason).contains(QStringLiteral("raise --tp")));
}

void TestLaw::weightFp8KeepsEmbeddings16Bit() {
    const auto m = model("deepseek-v3"); // carries an fp8 quantization_config
    const auto r = eval(m, gpu("h200"), dep(8));
    QCOMPARE(toString(r.weightDtype), std::string("fp8"));
    // 1 byte per quantized weight, 2 for the 16-bit rest, plus the fp32 scale of every
    // 128 × 128 block (4 B per 16,384 weights) and MLA's latent norms kept 16-bit.
    const std::int64_t base = r.params.total() + r.params.sixteenBitAlways();
    QVERIFY(r.weightBytes > base);
    QVERIFY(r.weightBytes - base < r.params.total() / 2000);
    Deployment bf = dep(8);
    bf.weightDtype = WeightDtype::BF16;
    QCOMPARE(eval(m, gpu("h200"), bf).weightBytes, 2 * r.params.total());
}

void TestLaw::decodeStepTraffic() {
    // Llama-3-70B GQA-8 at TP=8, batch 1, 8k: the weights dominate the step's bytes, so
    // shrinking KV further (MQA) buys little.
    const auto m = model("llama-3-70b");
    const auto gqa8 = eval(m, gpu("h100-sxm"), dep(8));
    QVERIFY(gqa8.step.kvFraction < 0.05);
    QCOMPARE(gqa8.step.kvBytes, gqa8.requestBytesPerRank);
    Deployment wide = dep(8);
    wide.batch = 64;
    const auto gqaB64 = eval(m, gpu("h100-sxm"), wide);
    QCOMPARE(gqaB64.step.kvBytes, 64 * gqa8.requestBytesPerRank);
    wide.kvHeads = 64;
    const auto mhaB64 = eval(m, gpu("h100-sxm"), wide);
    QVERIFY(mhaB64.step.kvFraction > 0.9); // MHA at batch 64: KV is nearly the whole step
    // The bound: all the step's bytes at HBM bandwidth (memory binds at batch 64), plus the TP
    // all-reduces over NVLink.
    QCOMPARE(gqaB64.step.timeLowerBoundS,
             static_cast<double>(gqaB64.step.weightBytes + gqaB64.step.kvBytes +
                                 gqaB64.step.activationBytes) /
                     3.35e12 +
                 gqaB64.step.commTimeS);
}

void TestLaw::sweepCoversEveryVariant() {
    const auto m = model("llama-3-70b");
    const auto rows = sweep(m, gpu("h100-sxm"), Deployment{}, 64);
    const auto kvs = validKvHeadCounts(m);
    QCOMPARE(kvs.size(), std::size_t(7));  // 64, 32, 16, 8, 4, 2, 1
    QCOMPARE(rows.size(), kvs.size() * 7); // TP 1, 2, 4, 8, 16, 32, 64
    int refused = 0;
    for (const auto& row : rows)
        refused += row.report.ok() ? 0 : 1;
    QCOMPARE(refused, 0); // every power-of-two TP works for power-of-two heads
    QCOMPARE(variantLabel(m, 64), std::string("MHA"));
    // The GQA paper names GQA by its KV groups: GQA-8 has 8 KV heads whatever h is.
    QCOMPARE(variantLabel(m, 8), std::string("GQA-8"));
    QCOMPARE(variantLabel(m, 16), std::string("GQA-16")); // g = 4
    QCOMPARE(variantLabel(m, 2), std::string("GQA-2"));   // g = 32
    QCOMPARE(variantLabel(m, 1), std::string("MQA"));
    QCOMPARE(variantLabel(model("llama-3-8b"), 8), std::string("GQA-8")); // g = 4
    QCOMPARE(variantLabel(model("llama-3-8b"), 32), std::string("MHA"));
    const auto falcon = model("falcon-7b"); // 71 heads: TP 1 only among powers of two
    int ok = 0;
    for (const auto& row : sweep(falcon, gpu("h100-sxm"), Deployment{}, 8))
        ok += row.report.ok() ? 1 : 0;
    QCOMPARE(ok, 2); // MHA and MQA at TP 1
    const auto ds = sweep(model("deepseek-v3"), gpu("h200"), Deployment{}, 16);
    QCOMPARE(ds.front().variant, std::string("MLA latent"));
}

void TestLaw::humanUnits_data() {
    QTest::addColumn<double>("bytes");
    QTest::addColumn<QString>("text");
    QTest::newRow("320 KiB") << 327680.0 << "320 KiB";
    QTest::newRow("2.5 MiB") << 2621440.0 << "2.5 MiB";
    QTest::newRow("40 KiB") << 40960.0 << "40 KiB";
    QTest::newRow("20 GiB") << 21474836480.0 << "20 GiB";
    QTest::newRow("bytes") << 656.0 << "656 B";
    QTest::newRow("1 MiB not 1024 KiB") << 1048575.0 << "1 MiB";
}

void TestLaw::humanUnits() {
    QFETCH(double, bytes);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(humanBytes(bytes)), text);
}

QTEST_GUILESS_MAIN(TestLaw)
#include "tst_law.moc"
