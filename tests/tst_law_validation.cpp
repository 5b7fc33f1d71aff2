// The validation rules (core/law/law.h validate), one data row per rule: each names the field
// and the rule in one line, and evaluate() refuses the same deployment. Rows with no field are
// configurations the engines accept, so validate() must too.
#include "core/law/law.h"
#include "core/model/model.h"
#include "testutils.h"

#include <QtTest/QtTest>

using namespace kvscope;
using namespace kvscope::test;

class TestLawValidation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void validationRules_data();
    void validationRules();
};

namespace {

/// tp, h_kv and dcp against the heads, and the cache dtype against the layout.
void addLayoutRows() {
    QTest::newRow("tp zero") << "llama-3-70b"
                             << "tp=0"
                             << "tp"
                             << "positive integer";
    QTest::newRow("tp negative") << "llama-3-70b"
                                 << "tp=-8"
                                 << "tp"
                                 << "positive integer";
    QTest::newRow("tp absurd") << "llama-3-70b"
                               << "tp=100000"
                               << "tp"
                               << "at most";
    QTest::newRow("h % tp") << "llama-3-70b"
                            << "tp=3"
                            << "tp"
                            << "must be divisible by tensor parallel size (3)";
    // Twelve query heads: the two KV-head regimes can fail while h % TP holds.
    QTest::newRow("kv >= tp must be divisible by tp") << "h12-kv6"
                                                      << "tp=4"
                                                      << "tp"
                                                      << "when it is at least the TP size";
    QTest::newRow("kv < tp must divide tp") << "h12-kv4"
                                            << "tp=6"
                                            << "tp"
                                            << "must be a multiple of the number of KV heads";
    QTest::newRow("valid: chatglm3 tp4 replicates") << "chatglm3-6b"
                                                    << "tp=4"
                                                    << ""
                                                    << "";
    QTest::newRow("valid: llama3-8b tp16 dcp2") << "llama-3-8b"
                                                << "tp=16,dcp=2"
                                                << ""
                                                << "";
    QTest::newRow("h_kv zero") << "llama-3-70b"
                               << "hkv=0"
                               << "h_kv"
                               << "positive integer";
    QTest::newRow("h_kv not a divisor") << "llama-3-70b"
                                        << "hkv=5"
                                        << "h_kv"
                                        << "must divide num_attention_heads (64)";
    QTest::newRow("dcp zero") << "llama-3-70b"
                              << "dcp=0"
                              << "dcp"
                              << "positive integer";
    QTest::newRow("dcp needs tp > h_kv") << "llama-3-70b"
                                         << "tp=8,dcp=2"
                                         << "dcp"
                                         << "greater than the model's total number of KV heads";
    QTest::newRow("dcp must divide tp") << "llama-3-8b"
                                        << "tp=16,dcp=3"
                                        << "dcp"
                                        << "divisible by decode context parallel size";
    QTest::newRow("fp8_ds_mla needs mla") << "llama-3-70b"
                                          << "kv=fp8_ds_mla"
                                          << "kv-dtype"
                                          << "MLA";
}

/// The sizes: context, batch, util, block size, batched tokens, pool and the GPU's figures.
void addSizeRows() {
    QTest::newRow("context zero") << "llama-3-70b"
                                  << "context=0"
                                  << "context"
                                  << "positive";
    QTest::newRow("context absurd") << "llama-3-70b"
                                    << "context=99999999999"
                                    << "context"
                                    << "at most";
    QTest::newRow("batch zero") << "llama-3-70b"
                                << "batch=0"
                                << "batch"
                                << "positive";
    QTest::newRow("batch absurd") << "llama-3-70b"
                                  << "batch=99999999"
                                  << "batch"
                                  << "at most";
    QTest::newRow("util zero") << "llama-3-70b"
                               << "util=0"
                               << "gpu-mem-util"
                               << "(0, 1]";
    QTest::newRow("util above one") << "llama-3-70b"
                                    << "util=1.5"
                                    << "gpu-mem-util"
                                    << "(0, 1]";
    QTest::newRow("block size") << "llama-3-70b"
                                << "block=24"
                                << "block-size"
                                << "one of";
    QTest::newRow("max batched tokens") << "llama-3-70b"
                                        << "mnbt=0"
                                        << "max-num-batched-tokens"
                                        << "positive";
    QTest::newRow("pool gib negative") << "llama-3-70b"
                                       << "pool=-1"
                                       << "pool-gib"
                                       << "positive";
    QTest::newRow("gpu bandwidth zero") << "llama-3-70b"
                                        << "gpubw=0"
                                        << "gpu.bandwidth_tb_s"
                                        << "positive";
}

} // namespace

void TestLawValidation::validationRules_data() {
    QTest::addColumn<QString>("modelId");
    QTest::addColumn<QString>("setting");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("ruleContains");
    addLayoutRows();
    addSizeRows();
}

void TestLawValidation::validationRules() {
    QFETCH(QString, modelId);
    QFETCH(QString, setting);
    QFETCH(QString, field);
    QFETCH(QString, ruleContains);
    ModelSpec m;
    if (modelId.startsWith(QLatin1String("h12-kv"))) {
        const std::string cfg = R"({"num_hidden_layers": 4, "num_attention_heads": 12,
            "hidden_size": 768, "num_key_value_heads": )" +
                                modelId.mid(6).toStdString() + "}";
        auto parsed = parseModelConfig(cfg, "h12");
        QVERIFY(parsed.ok());
        m = parsed.value();
    } else {
        m = model(modelId.toUtf8().constData());
    }
    auto g = gpu("h100-sxm");
    Deployment d;
    for (const QString& kv : setting.split(QLatin1Char(','))) {
        const auto parts = kv.split(QLatin1Char('='));
        const QString key = parts.at(0);
        const QString value = parts.at(1);
        if (key == QLatin1String("tp"))
            d.tp = value.toLongLong();
        else if (key == QLatin1String("hkv"))
            d.kvHeads = value.toLongLong();
        else if (key == QLatin1String("dcp"))
            d.dcp = value.toLongLong();
        else if (key == QLatin1String("kv"))
            d.kvDtype = parseKvDtype(value.toStdString()).value();
        else if (key == QLatin1String("context"))
            d.context = value.toLongLong();
        else if (key == QLatin1String("batch"))
            d.batch = value.toLongLong();
        else if (key == QLatin1String("util"))
            d.gpuMemUtil = value.toDouble();
        else if (key == QLatin1String("block"))
            d.blockSize = value.toLongLong();
        else if (key == QLatin1String("mnbt"))
            d.maxNumBatchedTokens = value.toLongLong();
        else if (key == QLatin1String("pool"))
            d.poolGiB = value.toDouble();
        else if (key == QLatin1String("gpubw"))
            g.bandwidthBytesPerS = value.toDouble();
    }
    const auto s = validate(m, g, d);
    if (field.isEmpty()) {
        // Rows whose configuration is valid: the engines accept them, so must we.
        QVERIFY2(s.ok(), s.ok() ? "" : s.error().message().c_str());
        return;
    }
    QVERIFY(!s.ok());
    QCOMPARE(QString::fromStdString(s.error().field), field);
    QVERIFY2(QString::fromStdString(s.error().rule).contains(ruleContains),
             s.error().message().c_str());
    const std::string line = s.error().message();
    QVERIFY(line.find('\n') == std::string::npos);
    QVERIFY(!evaluate(m, g, d).ok());
}

QTEST_GUILESS_MAIN(TestLawValidation)
#include "tst_law_validation.moc"
