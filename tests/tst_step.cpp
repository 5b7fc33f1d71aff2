// The whole decode step on the roofline (core/law/step.h): hand-computed bytes, FLOPs and TP
// traffic for Llama-3-70B and DeepSeek-V3, the chapter's "halving KV at 10% buys 5%", and the
// MoE expected-experts formula against a brute-force count.
#include "core/features/export.h"
#include "core/format.h"
#include "core/law/law.h"
#include "core/law/step.h"
#include "core/model/presets.h"
#include "core/model/weights.h"
#include "testutils.h"

#include <QtTest/QtTest>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

using namespace kvscope;
using namespace kvscope::test;

namespace {

Deployment dep(std::int64_t tp, std::int64_t batch, std::int64_t context,
               std::optional<std::int64_t> hkv = std::nullopt) {
    Deployment d;
    d.tp = tp;
    d.batch = batch;
    d.context = context;
    d.kvHeads = hkv;
    return d;
}

bool near(double a, double b, double rel) {
    return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

/// The mean number of distinct experts over every routing of `batch` tokens, each picking a
/// k-subset of E experts (all subsets equally likely): the exact expectation, by enumeration.
double bruteForceDistinct(int experts, int k, int batch) {
    std::vector<unsigned> subsets;
    for (unsigned mask = 0; mask < (1u << experts); ++mask)
        if (std::popcount(mask) == k)
            subsets.push_back(mask);
    double total = 0, count = 0;
    std::function<void(int, unsigned)> walk = [&](int token, unsigned used) {
        if (token == batch) {
            total += std::popcount(used);
            count += 1;
            return;
        }
        for (unsigned s : subsets)
            walk(token + 1, used | s);
    };
    walk(0, 0);
    return total / count;
}

} // namespace

class TestStep : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void handComputedStep_data();
    void handComputedStep();
    void chapterHalvingKvAtTenPercentBuysFivePercent_data();
    void chapterHalvingKvAtTenPercentBuysFivePercent();
    void expectedExpertsMatchesBruteForce_data();
    void expectedExpertsMatchesBruteForce();
    void moeWeightsGrowWithBatch();
    void fp8WhatIfWeightsAgree();
    void windowLayersCapAttention();
    void timeIsTheBindingTerm();
    void everyPresetHasAnInterconnect();
    void interconnectFieldRules_data();
    void interconnectFieldRules();
    void unknownInterconnectWarns();
    void jsonCarriesTheStep();
    void stepTableRows();
    void sweepIsEvaluatePerBatch_data();
    void sweepIsEvaluatePerBatch();
    void weightsFollowASpecChangedAfterUse();
};

// Llama-3-70B (L 80, d 8192, h 64, h_kv 8, d_h 128, I 28672, V 128256, untied, bf16).
// Parameters: attention/layer = 8192·8192 (q) + 2·8192·8·128 (k, v) + 8192·8192 (o)
//   = 150,994,944 → ×80 = 12,079,595,520; MLP 3·8192·28672·80 = 56,371,445,760;
//   lm_head 128256·8192 = 1,050,673,152; norms 161·8192 = 1,318,912.
// Weights read (embedding gathered, not streamed): (12,079,595,520 + 56,371,445,760 +
//   1,050,673,152 + 1,318,912) · 2 B / 8 = 17,375,758,336 B per rank.
// KV per rank at TP 8: 1 KV head · 256 · 2 B · 80 layers = 40,960 B/token; × 8,192 × B.
// Activations per token per rank (elements), h_rank 8, kv_rank 1:
//   attention = (8192 + 8·128 + 256) QKV + (1024 + 1024) kernel Q/O + (1024 + 8192) o_proj
//             + 256 new K/V = 20,992; residual 8·8192 = 65,536; MLP 2·8192 + 6·3584 = 37,888;
//   × 80 = 9,953,280, + 2·8192 (embedding) + 4·8192 (final norm) + 8192 + 16032 (lm_head)
//   = 10,026,656 → × 2 B × B.
// GEMM FLOPs: 2 · (12,079,595,520 + 56,371,445,760 + 1,050,673,152) · B / 8
//   = 17,375,428,608 · B. Attention: 2 · B · 8 heads · S · 256 · 80 = 327,680 · B · S.
// All-reduces: 2 · 80 · B · 8192 · 2 B · 2·7/8 = 4,587,520 · B bytes sent per rank.
//
// DeepSeek-V3 (L 61, d 7168, h 128, r 512, d_rope 64, d_nope 128, d_v 128, q_lora 1536,
// V 129280, 3 dense layers of I 18432, 58 MoE layers of 256 routed + 1 shared experts of 2048,
// top-8, fp8 weights in 128 × 128 blocks with one fp32 scale each, 16-bit
// embeddings/lm_head/norms/routers), TP 8, H200:
//   attention params 11,413,547,008; MLP params 657,652,187,136; router 58·7168·256
//   = 106,430,464; norms 123·7168 = 881,664; lm_head 926,679,040.
//   Attention per layer as loaded: q_a 1536·7168 + q_b 24576·1536 + kv_a 576·7168
//   + kv_b 32768·512 + o 7168·16384 = 187,105,280 fp8 bytes; scales 12·56 + 192·12
//   + ⌈576/128⌉·56 + 256·4 + 56·128 = 11,448 → 45,792 B; the q_a/kv_a layernorms 2048 · 2 B;
//   = 187,155,168 B, × 61 = 11,416,465,248 B.
//   Dense MLP layer: 3·18432·7168 = 396,361,728 + 3·144·56 scales · 4 B = 396,458,496 B.
//   One expert = 3·7168·2048 = 44,040,192 params + 3·16·56 scales · 4 B = 44,050,944 B;
//   the shared expert likewise; routed total 58·256 experts.
//   B = 1 touches 256·(1 − (1 − 8/256)) = 8 experts per layer; weights read
//   = (11,416,465,248 + 3·396,458,496 + 58·(1 + 8)·44,050,944
//   + (926,679,040 + 881,664 + 106,430,464) · 2 B) / 8 = 37,668,415,840 / 8 = 4,708,551,980 B.
//   B = 64 touches t = 256·(1 − (31/32)^64) = 222.4425 experts → (12,605,840,736
//   + 58·(1 + t)·44,050,944 + 2,067,982,336) / 8 = 73,194,908,598 B.
//   KV: (512 + 64) · 2 B · 61 = 70,272 B/token, replicated: × 8,192 × B.
//   Activations per token per rank (h_rank 16): attention = (7168 + 1536) + (1536 + 16·192)
//   + (7168 + 576) + (16·128 + 16·512) + (16·576 + 16·512) + (16·512 + 16·128)
//   + (16·128 + 7168) + 576 = 68,736; residual 57,344 per layer; MoE MLP 2·7168 +
//   6·(9·2048/8) + 7168 + 256 = 35,584; dense MLP 2·7168 + 6·2304 = 28,160; total
//   61·(68,736 + 57,344) + 58·35,584 + 3·28,160 + 7·7168 + 16,160 = 9,905,568 → × 2 B × B.
//   Active params = 11,413,547,008 + 3·3·7168·18432 + 58·9·44,040,192 + 106,430,464
//   + 926,679,040 = 36,624,721,920 → GEMM FLOPs 2 · 36,624,721,920 · B / 8.
//   Attention (absorbed): 2 · B · 16 · S · (2·512 + 64) · 61 = 2,123,776 · B · S.
//   All-reduces: 2 · 61 · B · 7168 · 2 · 2·7/8 = 3,060,736 · B.
void TestStep::handComputedStep_data() {
    QTest::addColumn<QString>("modelId");
    QTest::addColumn<QString>("gpuId");
    QTest::addColumn<qint64>("batch");
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("weightBytes");
    QTest::addColumn<qint64>("kvBytes");
    QTest::addColumn<qint64>("activationBytes");
    QTest::addColumn<double>("gemmFlops");
    QTest::addColumn<double>("attentionFlops");
    QTest::addColumn<qint64>("commBytes");
    QTest::addColumn<QString>("bound");

    // 5.29 ms of bytes at 3.35 TB/s against 0.02 ms of FLOPs: memory binds.
    QTest::newRow("llama-3-70b tp8 b1 8k")
        << "llama-3-70b"
        << "h100-sxm" << qint64(1) << qint64(8192) << qint64(17375758336) << qint64(40960LL * 8192)
        << qint64(10026656LL * 2) << 17375428608.0 << 327680.0 * 8192 << qint64(4587520)
        << "memory";
    QTest::newRow("llama-3-70b tp8 b64 8k")
        << "llama-3-70b"
        << "h100-sxm" << qint64(64) << qint64(8192) << qint64(17375758336)
        << qint64(40960LL * 8192 * 64) << qint64(10026656LL * 2 * 64) << 17375428608.0 * 64
        << 327680.0 * 8192 * 64 << qint64(4587520LL * 64) << "memory";
    // 1,024 short requests: 17.8 TFLOP of GEMMs take 18.0 ms at 989.4 TFLOP/s, the 43.3 GB of
    // bytes 12.9 ms: compute binds.
    QTest::newRow("llama-3-70b tp8 b1024 128")
        << "llama-3-70b"
        << "h100-sxm" << qint64(1024) << qint64(128) << qint64(17375758336)
        << qint64(40960LL * 128 * 1024) << qint64(10026656LL * 2 * 1024) << 17375428608.0 * 1024
        << 327680.0 * 128 * 1024 << qint64(4587520LL * 1024) << "compute";
    QTest::newRow("deepseek-v3 tp8 b1 8k")
        << "deepseek-v3"
        << "h200" << qint64(1) << qint64(8192) << qint64(4708551980) << qint64(70272LL * 8192)
        << qint64(9905568LL * 2) << 2.0 * 36624721920.0 / 8 << 2123776.0 * 8192 << qint64(3060736)
        << "memory";
    QTest::newRow("deepseek-v3 tp8 b64 8k")
        << "deepseek-v3"
        << "h200" << qint64(64) << qint64(8192) << qint64(73194908598)
        << qint64(70272LL * 8192 * 64) << qint64(9905568LL * 2 * 64) << 2.0 * 36624721920.0 * 64 / 8
        << 2123776.0 * 8192 * 64 << qint64(3060736LL * 64) << "memory";
}

void TestStep::handComputedStep() {
    QFETCH(QString, modelId);
    QFETCH(QString, gpuId);
    QFETCH(qint64, batch);
    QFETCH(qint64, context);
    QFETCH(qint64, weightBytes);
    QFETCH(qint64, kvBytes);
    QFETCH(qint64, activationBytes);
    QFETCH(double, gemmFlops);
    QFETCH(double, attentionFlops);
    QFETCH(qint64, commBytes);
    QFETCH(QString, bound);
    const auto g = gpu(gpuId.toUtf8().constData());
    const auto r = eval(model(modelId.toUtf8().constData()), g, dep(8, batch, context));
    const DecodeStep& s = r.step;
    QVERIFY2(std::llabs(s.weightBytes - weightBytes) <= 1,
             qPrintable(QString::number(s.weightBytes)));
    QCOMPARE(s.kvBytes, kvBytes);
    QCOMPARE(s.activationBytes, activationBytes);
    QVERIFY2(near(s.gemmFlops, gemmFlops, 1e-12),
             qPrintable(QString::number(s.gemmFlops, 'g', 17)));
    QVERIFY2(near(s.attentionFlops, attentionFlops, 1e-12),
             qPrintable(QString::number(s.attentionFlops, 'g', 17)));
    QCOMPARE(s.commBytes, commBytes);
    QCOMPARE(QString::fromStdString(toString(s.bound)), bound);
    // The times follow from the counts and the datasheet.
    const double bytes = static_cast<double>(weightBytes + kvBytes + activationBytes);
    const double gemmPeak =
        r.weightDtype == WeightDtype::FP8 ? g.peakFp8FlopPerS : g.peakBf16FlopPerS;
    QVERIFY(near(s.memoryTimeS, bytes / g.bandwidthBytesPerS, 1e-9));
    QVERIFY(near(s.computeTimeS, gemmFlops / gemmPeak + attentionFlops / g.peakBf16FlopPerS, 1e-9));
    QVERIFY(near(s.commTimeS, static_cast<double>(commBytes) / 450e9, 1e-12)); // NVLink 4 each way
    QVERIFY(near(s.timeLowerBoundS, std::max(s.memoryTimeS, s.computeTimeS) + s.commTimeS, 1e-12));
    QVERIFY(near(s.tokensPerS, static_cast<double>(batch) / s.timeLowerBoundS, 1e-12));
    QVERIFY(near(s.tokensPerSPerGpu, s.tokensPerS / 8, 1e-12));
    QVERIFY(near(s.kvFraction, static_cast<double>(kvBytes) / bytes, 1e-12));
}

// The chapter: "Halving KV bytes again when KV is 10% of the step's traffic buys 5%." On
// Llama-3-70B at TP 2 and 8k context, find the smallest batch where KV reaches 10% of the
// step's bytes; going from h_kv 8 (GQA-8) to h_kv 4 (GQA-16) halves the KV and makes the step
// 5% faster, because the weights (70 GB per rank) are what the step waits for.
void TestStep::chapterHalvingKvAtTenPercentBuysFivePercent_data() {
    QTest::addColumn<QString>("gpuId");
    QTest::newRow("h100-sxm") << "h100-sxm";
    QTest::newRow("h200") << "h200";
}

void TestStep::chapterHalvingKvAtTenPercentBuysFivePercent() {
    QFETCH(QString, gpuId);
    const auto m = model("llama-3-70b");
    const auto g = gpu(gpuId.toUtf8().constData());
    const auto b = batchAtKvFraction(m, g, dep(2, 1, 8192, 8), 0.10);
    QVERIFY(b.has_value());
    // 70.5 GB of weights per rank, 1.34 GB of KV per 8k request per rank: 6 requests.
    QCOMPARE(*b, qint64(6));
    const auto gqa8 = eval(m, g, dep(2, *b, 8192, 8)).step;
    QVERIFY(gqa8.kvFraction >= 0.10);
    QVERIFY(eval(m, g, dep(2, *b - 1, 8192, 8)).step.kvFraction < 0.10);
    QVERIFY(gqa8.bound == StepBound::Memory);
    const auto gqa16 = eval(m, g, dep(2, *b, 8192, 4)).step;
    QCOMPARE(gqa16.kvBytes * 2, gqa8.kvBytes);
    const double faster = 1.0 - gqa16.timeLowerBoundS / gqa8.timeLowerBoundS;
    QVERIFY2(std::fabs(faster - 0.05) <= 0.01, qPrintable(QString::number(faster)));
}

void TestStep::expectedExpertsMatchesBruteForce_data() {
    QTest::addColumn<int>("experts");
    QTest::addColumn<int>("k");
    QTest::addColumn<int>("batch");
    QTest::newRow("E4 k1 B1") << 4 << 1 << 1;
    QTest::newRow("E4 k1 B3") << 4 << 1 << 3;
    QTest::newRow("E4 k2 B3") << 4 << 2 << 3;
    QTest::newRow("E5 k3 B2") << 5 << 3 << 2;
    QTest::newRow("E6 k2 B4") << 6 << 2 << 4;
    QTest::newRow("E8 k2 B3") << 8 << 2 << 3;
    QTest::newRow("E8 k8 B2") << 8 << 8 << 2; // every token picks every expert
}

void TestStep::expectedExpertsMatchesBruteForce() {
    QFETCH(int, experts);
    QFETCH(int, k);
    QFETCH(int, batch);
    const double brute = bruteForceDistinct(experts, k, batch);
    const double formula = expectedDistinctExperts(experts, k, batch);
    QVERIFY2(std::fabs(brute - formula) <= 1e-12,
             qPrintable(QStringLiteral("brute %1, formula %2").arg(brute).arg(formula)));
}

void TestStep::moeWeightsGrowWithBatch() {
    // DeepSeek-V3: one token reads its 8 routed experts per MoE layer; 512 tokens touch nearly
    // all 256; dense Llama reads the same weights at any batch.
    const auto ds = model("deepseek-v3");
    const auto g = gpu("h200");
    const auto b1 = eval(ds, g, dep(8, 1, 8192)).step;
    QCOMPARE(b1.moeLayers, qint64(58));
    QVERIFY(near(b1.expertsTouchedPerMoeLayer, 8.0, 1e-12));
    const auto b512 = eval(ds, g, dep(8, 512, 8192)).step;
    QVERIFY(b512.expertsTouchedPerMoeLayer > 255.9);
    QVERIFY(b512.weightBytes > 10 * b1.weightBytes);
    // Every expert touched: all of the checkpoint as loaded (fp8 values and their fp32
    // 128 × 128 block scales) but the (gathered) embedding, / TP; (1 − 8/256)^512 ≈ 1e-7 of
    // the experts stay untouched.
    const auto r = eval(ds, g, dep(8, 512, 8192));
    const double all = static_cast<double>(r.weightBytes - 2 * r.params.embedding) / 8;
    QVERIFY2(near(static_cast<double>(b512.weightBytes), all, 1e-6),
             qPrintable(QString::number(b512.weightBytes - all)));
    const auto llama = model("llama-3-70b");
    QCOMPARE(eval(llama, g, dep(8, 1, 8192)).step.weightBytes,
             eval(llama, g, dep(8, 256, 8192)).step.weightBytes);
}

void TestStep::fp8WhatIfWeightsAgree() {
    // Llama-3-8B (L 32, d 4096, h_kv 8, d_h 128) as an fp8 checkpoint in 128 × 128 blocks with
    // one fp32 scale each (the quantization_config of Qwen3-8B-FP8 and DeepSeek-V3), h_kv 4.
    // Checkpoint k_proj and v_proj, 1024 × 4096 each: 4,194,304 B + 8·32 scales · 4 B = 4,195,328
    // B. What-if, 512 × 4096: 2,097,152 + 4·32 · 4 = 2,097,664 B. Delta per layer
    // 2·(2,097,664 − 4,195,328) = −4,195,328 B; × 32 layers = −134,250,496 B.
    auto m = test::llama3_8bFp8Blocks();
    QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
    const auto g = gpu("h100-sxm");
    const auto r = eval(m.value(), g, dep(1, 1, 8192, 4));
    QVERIFY(r.weightDtype == WeightDtype::FP8);
    QCOMPARE(r.kvProjWeightBytesDelta, qint64(-134250496));
    // The export and the text report say the same bytes.
    QCOMPARE(reportNumber(r, "kv_proj_weight_bytes_vs_checkpoint").value_or(0), -134250496.0);
    const std::string text = textReport(m.value(), g, r);
    const std::string row = "-" + humanBytes(134250496.0) + " fp8;";
    QVERIFY2(text.find(row) != std::string::npos, text.c_str());
}

void TestStep::windowLayersCapAttention() {
    // Gemma-2-9B alternates 4,096-token sliding layers with full ones: at 32k context the
    // window layers attend over 4,096 positions, so attention FLOPs and KV bytes both fall
    // short of 42 full layers by the same factor.
    const auto m = model("gemma-2-9b");
    QVERIFY(m.windowLayerCount() > 0);
    const auto r = eval(m, gpu("h100-sxm"), dep(1, 1, 32768));
    double positions = 0;
    for (auto w : m.layerWindow)
        positions += static_cast<double>(w > 0 ? std::min<std::int64_t>(32768, w) : 32768);
    QVERIFY(positions < 42.0 * 32768);
    QVERIFY(near(r.step.attentionFlops,
                 2.0 * static_cast<double>(m.qHeads.value) * positions *
                     static_cast<double>(m.keyDim() + m.valueDim()),
                 1e-12));
    QCOMPARE(r.step.kvBytes, r.requestBytesPerRank);
}

void TestStep::timeIsTheBindingTerm() {
    // Llama-3-8B on 8 × L40S (PCIe Gen4, 32 GB/s each way) at batch 1,024: the all-reduces
    // (2·32·1024·4096·2·2·7/8 = 939,524,096 B → 29.4 ms) outlast the bytes (9.5 ms).
    const auto r = eval(model("llama-3-8b"), gpu("l40s"), dep(8, 1024, 128));
    QCOMPARE(r.step.commBytes, qint64(939524096));
    QVERIFY(near(r.step.commTimeS, 939524096.0 / 32e9, 1e-12));
    QVERIFY(r.step.bound == StepBound::Communication);
    // TP 1 sends nothing.
    const auto one = eval(model("llama-3-8b"), gpu("l40s"), dep(1, 1024, 128));
    QCOMPARE(one.step.commBytes, qint64(0));
    QCOMPARE(one.step.commTimeS, 0.0);
}

void TestStep::everyPresetHasAnInterconnect() {
    QVERIFY(gpuPresets().size() >= 8);
    for (const auto& p : gpuPresets()) {
        const auto g = gpu(p.id.c_str());
        QVERIFY2(g.interconnectBytesPerS > 0, p.id.c_str());
        QVERIFY2(!g.interconnect.empty() && !g.interconnectSource.empty(), p.id.c_str());
    }
    QCOMPARE(gpu("h100-sxm").interconnectBytesPerS, 900e9); // NVLink 4
    QCOMPARE(gpu("h200").interconnectBytesPerS, 900e9);
    QCOMPARE(gpu("b200").interconnectBytesPerS, 1800e9);     // NVLink 5
    QCOMPARE(gpu("h100-pcie").interconnectBytesPerS, 128e9); // PCIe Gen5 x16
    QCOMPARE(gpu("l40s").interconnectBytesPerS, 64e9);       // PCIe Gen4 x16
}

void TestStep::interconnectFieldRules_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("error");
    QTest::newRow("negative") << R"("interconnect_gb_s": -1)"
                              << "interconnect_gb_s: must be a positive number";
    QTest::newRow("string") << R"("interconnect_gb_s": "900")"
                            << "interconnect_gb_s: must be a number";
    QTest::newRow("absurd") << R"("interconnect_gb_s": 1e9)"
                            << "interconnect_gb_s: must be at most 1000000";
    QTest::newRow("absent is fine") << R"("name": "x")"
                                    << "";
}

void TestStep::interconnectFieldRules() {
    QFETCH(QString, field);
    QFETCH(QString, error);
    const std::string text = R"({"memory_gb": 80, "bandwidth_tb_s": 3.35, "bf16_tflops": 989.4,
        "fp32_tflops": 66.9, )" +
                             field.toStdString() + "}";
    auto g = parseGpuJson(text, "custom");
    if (error.isEmpty()) {
        QVERIFY2(g.ok(), g.ok() ? "" : g.error().message().c_str());
        QCOMPARE(g->interconnectBytesPerS, 0.0);
    } else {
        QVERIFY(!g.ok());
        QCOMPARE(QString::fromStdString(g.error().message()), error);
    }
}

void TestStep::unknownInterconnectWarns() {
    auto g = gpu("h100-sxm");
    g.interconnectBytesPerS = 0;
    const auto r = eval(model("llama-3-70b"), g, dep(8, 1, 8192));
    QVERIFY(!r.step.commCounted);
    QCOMPARE(r.step.commTimeS, 0.0);
    QVERIFY(r.step.commBytes > 0);
    bool warned = false;
    for (const auto& w : r.warnings)
        warned = warned || w.find("interconnect_gb_s") != std::string::npos;
    QVERIFY(warned);
}

void TestStep::jsonCarriesTheStep() {
    const auto m = model("llama-3-70b");
    const auto g = gpu("h100-sxm");
    const auto r = eval(m, g, dep(8, 64, 8192));
    const auto j = nlohmann::json::parse(jsonReport(m, g, r));
    const auto& s = j.at("decode_step");
    QCOMPARE(s.at("bytes").get<std::int64_t>(), r.step.bytes());
    QCOMPARE(s.at("flops").get<double>(), r.step.flops());
    QCOMPARE(s.at("comm_bytes").get<std::int64_t>(), qint64(4587520LL * 64));
    QCOMPARE(s.at("bound").get<std::string>(), std::string("memory"));
    QCOMPARE(s.at("time_lower_bound_s").get<double>(), r.step.timeLowerBoundS);
    QCOMPARE(s.at("tokens_per_s_per_gpu").get<double>(), r.step.tokensPerSPerGpu);
    QCOMPARE(s.at("tokens_per_s").get<double>(), 64 / r.step.timeLowerBoundS);
    const QString text = QString::fromStdString(textReport(m, g, r));
    QVERIFY(text.contains(QStringLiteral("time per token >=")));
    QVERIFY(text.contains(QStringLiteral("memory-bound")));
    QVERIFY(text.contains(QStringLiteral(" per GPU")));
}

void TestStep::stepTableRows() {
    const auto m = model("llama-3-70b");
    const auto g = gpu("h100-sxm");
    const Deployment base = dep(8, 1, 8192);
    const auto rows = stepSweep(m, g, base, {1, 8, 64});
    QCOMPARE(rows.size(), validKvHeadCounts(m).size() * 3);
    // Every h_kv of 64 runs at TP 8 (64, 32, 16, 8 shard; 4, 2, 1 replicate).
    for (const auto& row : rows)
        QVERIFY2(row.step.has_value(), row.error.c_str());
    const std::string csv = stepTable(m, g, base, rows, true);
    QCOMPARE(std::count(csv.begin(), csv.end(), '\n'), std::ptrdiff_t(rows.size() + 1));
    QVERIFY(csv.rfind("variant,kv_heads,batch,", 0) == 0);
    const std::string text = stepTable(m, g, base, rows, false);
    QVERIFY(text.find("GQA-8") != std::string::npos);
    QVERIFY(text.find("ms/token") != std::string::npos);
    // The MLA latent leads the table of an MLA model.
    const auto ds = stepSweep(model("deepseek-v3"), gpu("h200"), base, {1});
    QCOMPARE(ds.front().variant, std::string("MLA latent"));
}

// stepSweep and batchAtKvFraction evaluate a layout once and derive each batch's step: the rows
// are evaluate's own at every batch (and its refusal where it refuses), and the 10% batch is the
// one a binary search over evaluate finds.
void TestStep::sweepIsEvaluatePerBatch_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("gpu");
    QTest::addColumn<qint64>("tp");
    QTest::newRow("deepseek-v3 h200 tp8") << "deepseek-v3"
                                          << "h200" << qint64(8);
    QTest::newRow("llama-3-70b h100 tp2") << "llama-3-70b"
                                          << "h100-sxm" << qint64(2);
    QTest::newRow("gemma-2-9b h100 tp1") << "gemma-2-9b"
                                         << "h100-sxm" << qint64(1);
}

void TestStep::sweepIsEvaluatePerBatch() {
    QFETCH(QString, model);
    QFETCH(QString, gpu);
    QFETCH(qint64, tp);
    const auto m = ::model(model.toLatin1().constData());
    const auto g = ::gpu(gpu.toLatin1().constData());
    const Deployment base = dep(tp, 1, 8192);
    const std::vector<std::int64_t> batches{0, 1, 3, 64, 1000, kMaxBatch + 1};
    for (const auto& row : stepSweep(m, g, base, batches)) {
        Deployment d = base;
        d.batch = row.batch;
        d.kvHeads = row.kvHeads > 0 ? std::optional<std::int64_t>(row.kvHeads) : std::nullopt;
        if (d.kvDtype == KvDtype::FP8DsMla && row.kvHeads > 0)
            d.kvDtype = KvDtype::FP8;
        const auto r = evaluate(m, g, d);
        QCOMPARE(row.step.has_value(), r.ok());
        if (!r.ok()) {
            QCOMPARE(row.error, r.error().message());
            continue;
        }
        QCOMPARE(row.step->bytes(), r->step.bytes());
        QCOMPARE(row.step->kvBytes, r->step.kvBytes);
        QCOMPARE(row.step->timeLowerBoundS, r->step.timeLowerBoundS);
        QCOMPARE(row.step->kvFraction, r->step.kvFraction);
    }
    // The smallest B whose KV share reaches 10%, searched with evaluate alone.
    auto share = [&](std::int64_t b) {
        Deployment d = base;
        d.batch = b;
        return eval(m, g, d).step.kvFraction;
    };
    std::int64_t lo = 1, hi = 1;
    while (share(hi) < 0.10 && hi < kMaxBatch) {
        lo = hi + 1;
        hi = std::min(kMaxBatch, hi * 2);
    }
    while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        if (share(mid) >= 0.10)
            hi = mid;
        else
            lo = mid + 1;
    }
    const auto b = batchAtKvFraction(m, g, base, 0.10);
    QVERIFY(b.has_value());
    QCOMPARE(*b, lo);
}

// loadedWeights remembers its results per model: a copy whose quantization is changed after
// the original was sized (as a snapshot's hf_quant_config.json is read after its config) is
// sized anew, and the original keeps its own.
void TestStep::weightsFollowASpecChangedAfterUse() {
    const auto m = model("deepseek-v3");
    const LoadedWeights fp8 = loadedWeights(m, WeightDtype::Auto, 8);
    QVERIFY(fp8.dtype == WeightDtype::FP8);
    ModelSpec plain = m; // shares m's tensor inventory
    plain.weights.quant = QuantSpec{};
    const LoadedWeights bf16 = loadedWeights(plain, WeightDtype::Auto, 8);
    QVERIFY(bf16.dtype == WeightDtype::BF16);
    // 16-bit: two bytes per parameter of the language model (vision apart).
    QCOMPARE(bf16.bytes, 2 * countParams(m).total());
    QVERIFY(bf16.bytes > fp8.bytes);
    QCOMPARE(loadedWeights(m, WeightDtype::Auto, 8).bytes, fp8.bytes);
}

QTEST_GUILESS_MAIN(TestStep)
#include "tst_step.moc"
