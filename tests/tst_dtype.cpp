// The KV dtype table: bytes per token and per page for every KV cache dtype the engines offer
// (scales included), names that round-trip, and the layouts an MLA latent can and cannot take.
#include "core/law/law.h"
#include "core/model/dtype.h"
#include "core/model/gpu.h"
#include "core/model/model.h"
#include "core/model/presets.h"
#include "testutils.h"

#include <QtTest/QtTest>

using namespace kvscope;

class TestDtype : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void dtypeTable_data();
    void dtypeTable();
    void dtypeNamesRoundTrip();
    void dtypeOnMlaLatent();
};

void TestDtype::dtypeTable_data() {
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<qint64>("tokenBytes"); // Llama-3-8B layer: 8 KV heads, d_k = d_v = 128
    QTest::addColumn<qint64>("pageBytes");  // × 16-token block, one layer, TP = 1
    // 8 × (128 + 128) × 2 = 4,096 B
    QTest::newRow("bf16") << "bf16" << 4'096LL << 65'536LL;
    QTest::newRow("auto") << "auto" << 4'096LL << 65'536LL;
    QTest::newRow("fp32") << "fp32" << 8'192LL << 131'072LL;
    // 8 × 256 × 1 = 2,048 B
    QTest::newRow("fp8 e4m3") << "fp8_e4m3" << 2'048LL << 32'768LL;
    QTest::newRow("fp8 e5m2") << "fp8_e5m2" << 2'048LL << 32'768LL;
    // nvfp4_kv_cache_full_dim(128) = 64 + 8 = 72 bytes for K and for V: 8 × 144 = 1,152 B
    QTest::newRow("nvfp4") << "nvfp4" << 1'152LL << 18'432LL;
    // 8 × (256 × 1 + 2 × 4 B fp32 scales) = 2,112 B
    QTest::newRow("int8 per token head") << "int8_per_token_head" << 2'112LL << 33'792LL;
    QTest::newRow("fp8 per token head") << "fp8_per_token_head" << 2'112LL << 33'792LL;
}

void TestDtype::dtypeTable() {
    QFETCH(QString, dtype);
    QFETCH(qint64, tokenBytes);
    QFETCH(qint64, pageBytes);
    auto k = parseKvDtype(dtype.toStdString());
    QVERIFY(k.ok());
    QCOMPARE(kvTokenBytes(k.value(), 8, 128, 128), tokenBytes);
    auto m = loadModel("llama-3-8b");
    QVERIFY(m.ok());
    Deployment d;
    d.kvDtype = k.value();
    d.poolGiB = 40;
    auto r = evaluate(m.value(), loadGpu("h100-sxm").value(), d);
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->pageBytes, pageBytes);
    QCOMPARE(r->cellBytesPerToken, 32 * tokenBytes);
    QCOMPARE(r->blocksPerRank, r->pool.poolBytes / (pageBytes * 32));
}

void TestDtype::dtypeNamesRoundTrip() {
    QVERIFY(kvDtypeTable().size() >= 10);
    for (const auto& row : kvDtypeTable()) {
        auto k = parseKvDtype(row.name);
        QVERIFY2(k.ok(), row.name);
        QVERIFY(k.value() == row.dtype);
        QCOMPARE(toString(row.dtype), std::string(row.name));
        QVERIFY(std::string(row.engines).find("vllm") != std::string::npos);
    }
    QVERIFY(parseKvDtype("fp8_e4m3").value() == KvDtype::FP8);
    QVERIFY(parseKvDtype("bfloat16").value() == KvDtype::BF16);
    const auto bad = parseKvDtype("int3\xff");
    QVERIFY(!bad.ok());
    QVERIFY(test::validUtf8(bad.error().message()));
    QVERIFY(QString::fromStdString(bad.error().rule).contains(QStringLiteral("nvfp4")));
    // fp8_ds_mla and the indexer: fixed layouts (MLAAttentionSpec: 656; Indexer: 128 + 4).
    QCOMPARE(kvTokenBytes(KvDtype::FP8DsMla, 1, 576, 0), 656LL);
    QCOMPARE(indexerBytesPerToken(128), 132LL);
}

void TestDtype::dtypeOnMlaLatent() {
    // DeepSeek-V3.2 latent: fp8 576 + indexer 132 = 708; fp8_ds_mla 656 + 132 = 788; nvfp4 and
    // per-token-head layouts are per-head K/V layouts, refused for the latent.
    auto m = loadModelConfigFile(
        test::fixture(QStringLiteral("configs-2026/deepseek-ai__DeepSeek-V3.2.json")));
    QVERIFY(m.ok());
    Deployment d;
    d.tp = 8;
    d.poolGiB = 40;
    d.kvDtype = KvDtype::FP8;
    QCOMPARE(evaluate(m.value(), loadGpu("h200").value(), d)->cellBytesPerToken, 61LL * 708);
    d.kvDtype = KvDtype::FP8DsMla;
    QCOMPARE(evaluate(m.value(), loadGpu("h200").value(), d)->cellBytesPerToken, 61LL * 788);
    for (KvDtype k : {KvDtype::NVFP4, KvDtype::Int8PerTokenHead, KvDtype::FP8PerTokenHead}) {
        d.kvDtype = k;
        auto r = evaluate(m.value(), loadGpu("h200").value(), d);
        QVERIFY(!r.ok());
        QCOMPARE(r.error().field, std::string("kv-dtype"));
    }
}

QTEST_GUILESS_MAIN(TestDtype)
#include "tst_dtype.moc"
