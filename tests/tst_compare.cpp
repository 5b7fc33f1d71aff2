// Compare: ratios B / A and their phrasing, side errors, and `kvscope-cli compare`.
#include "cli_runner.h"
#include "core/features/compare.h"
#include "core/features/export.h"
#include "core/model/presets.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>
#include <cmath>
#include <limits>

using namespace kvscope;

namespace {

Scenario scenario(const char* model, std::int64_t tp, std::int64_t kvHeads = 0,
                  double poolGiB = 0) {
    Scenario s{loadModel(model).value(), loadGpu("h100-sxm").value(), Deployment{}};
    s.deployment.tp = tp;
    s.deployment.poolModel = PoolModel::Datasheet;
    if (kvHeads > 0)
        s.deployment.kvHeads = kvHeads;
    if (poolGiB > 0)
        s.deployment.poolGiB = poolGiB;
    return s;
}

} // namespace

class TestCompare : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void ratios_data() {
        QTest::addColumn<QString>("aModel");
        QTest::addColumn<int>("aTp");
        QTest::addColumn<int>("aKv");
        QTest::addColumn<QString>("bModel");
        QTest::addColumn<int>("bTp");
        QTest::addColumn<int>("bKv");
        QTest::addColumn<double>("poolGiB");
        QTest::addColumn<double>("bytes");
        QTest::addColumn<double>("tokens");
        QTest::addColumn<double>("concurrency");
        QTest::addColumn<double>("intensity");
        QTest::addColumn<double>("attainable");
        // MHA → GQA-8 at TP=8: an eighth of the bytes, 8x tokens, 20 → 162 requests.
        QTest::newRow("llama3-70b mha vs gqa8 tp8")
            << "llama-3-70b" << 8 << 64 << "llama-3-70b" << 8 << 0 << 0.0 << 0.125 << 8.0 << 8.1
            << 8.0 << 8.0;
        // At TP=8 MQA and GQA-8 store the same per-rank cell: every ratio is 1.
        QTest::newRow("llama3-70b gqa8 vs mqa tp8") << "llama-3-70b" << 8 << 0 << "llama-3-70b" << 8
                                                    << 1 << 0.0 << 1.0 << 1.0 << 1.0 << 1.0 << 1.0;
        // Fixed 40 GiB pool: 611,191 / 1,048,576 tokens.
        QTest::newRow("gqa8 vs mla tp8 pool40")
            << "llama-3-70b" << 8 << 0 << "deepseek-v3" << 8 << 0 << 40.0 << 70272.0 / 40960.0
            << 611191.0 / 1048576.0 << 74.0 / 128.0 << (2.0 * 16 * 1088 / (2 * 576)) / 8.0
            << (2.0 * 16 * 1088 / (2 * 576)) / 8.0;
    }
    void ratios() {
        QFETCH(QString, aModel);
        QFETCH(int, aTp);
        QFETCH(int, aKv);
        QFETCH(QString, bModel);
        QFETCH(int, bTp);
        QFETCH(int, bKv);
        QFETCH(double, poolGiB);
        auto c = compare(scenario(aModel.toUtf8().constData(), aTp, aKv, poolGiB),
                         scenario(bModel.toUtf8().constData(), bTp, bKv, poolGiB));
        QVERIFY2(c.ok(), c.ok() ? "" : c.error().message().c_str());
        const char* keys[] = {"bytes_per_token_per_rank", "tokens", "concurrency", "intensity",
                              "attainable_fraction"};
        QFETCH(double, bytes);
        QFETCH(double, tokens);
        QFETCH(double, concurrency);
        QFETCH(double, intensity);
        QFETCH(double, attainable);
        const double expected[] = {bytes, tokens, concurrency, intensity, attainable};
        for (int i = 0; i < 5; ++i) {
            const CompareRatio* r = c->ratio(keys[i]);
            QVERIFY(r);
            QVERIFY2(std::fabs(r->ratio - expected[i]) <= 1e-3 * expected[i],
                     qPrintable(QStringLiteral("%1: %2 vs %3")
                                    .arg(QLatin1String(keys[i]))
                                    .arg(r->ratio)
                                    .arg(expected[i])));
            QVERIFY(std::fabs(r->ratio - r->b / r->a) < 1e-12);
        }
    }

    void crossover() {
        auto c = compare(scenario("llama-3-70b", 8, 0, 40), scenario("deepseek-v3", 8, 0, 40));
        QVERIFY(c.ok());
        QVERIFY(c->crossover.has_value());
        QVERIFY(std::fabs(*c->crossover - 327680.0 / 70272.0) < 1e-9);
        QVERIFY2(c->crossoverPhrase.find("MLA loses") != std::string::npos,
                 c->crossoverPhrase.c_str());
        auto same = compare(scenario("llama-3-70b", 8), scenario("llama-3-70b", 4));
        QVERIFY(same.ok());
        QVERIFY(!same->crossover.has_value());
    }

    void phrasing_data() {
        QTest::addColumn<double>("ratio");
        QTest::addColumn<QString>("expected");
        QTest::newRow("an eighth") << 0.125 << "×8 fewer bytes per token per rank";
        QTest::newRow("eight times") << 8.0 << "×8 more bytes per token per rank";
        QTest::newRow("8.1 times") << 8.1 << "×8.1 more bytes per token per rank";
        QTest::newRow("4.66 times") << 4.663 << "×4.66 more bytes per token per rank";
        QTest::newRow("within half a percent") << 1.004 << "same bytes per token per rank";
        QTest::newRow("exactly one") << 1.0 << "same bytes per token per rank";
        QTest::newRow("zero in B") << 0.0 << "no bytes per token per rank in B";
        QTest::newRow("zero in A") << std::numeric_limits<double>::quiet_NaN()
                                   << "n/a: bytes per token per rank is zero in A";
    }
    void phrasing() {
        QFETCH(double, ratio);
        QFETCH(QString, expected);
        QCOMPARE(
            QString::fromStdString(phraseRatio(ratio, "bytes per token per rank", "more", "fewer")),
            expected);
    }

    void sideErrorsNameTheSide() {
        Scenario bad = scenario("llama-3-70b", 8);
        bad.deployment.tp = 3; // 64 % 3 != 0
        auto c = compare(scenario("llama-3-70b", 8), bad);
        QVERIFY(!c.ok());
        QVERIFY2(c.error().field.rfind("b.", 0) == 0, c.error().message().c_str());
        auto d = compare(bad, scenario("llama-3-70b", 8));
        QVERIFY(!d.ok());
        QVERIFY2(d.error().field.rfind("a.", 0) == 0, d.error().message().c_str());
    }

    // The compared values print as their report fields do (the CLI's text and the GUI table):
    // MHA → GQA-8 on Llama-3-70B TP 8 is 20 → 162 requests, 320 KiB → 40 KiB per rank.
    void valuesPrintAsTheirFields() {
        auto c = compare(scenario("llama-3-70b", 8, 64), scenario("llama-3-70b", 8));
        QVERIFY(c.ok());
        const CompareRatio* conc = c->ratio("concurrency");
        const CompareRatio* cell = c->ratio("bytes_per_token_per_rank");
        QVERIFY(conc && cell);
        QCOMPARE(conc->field, std::string("max_concurrency"));
        QCOMPARE(formatCompareValue(*conc, conc->a), std::string("20 requests"));
        QCOMPARE(formatCompareValue(*conc, conc->b), std::string("162 requests"));
        QCOMPARE(formatCompareValue(*cell, cell->a), std::string("320 KiB"));
        QCOMPARE(formatCompareValue(*cell, cell->b), std::string("40 KiB"));
        const std::string text =
            comparisonText(scenario("llama-3-70b", 8, 64), scenario("llama-3-70b", 8), c.value());
        QVERIFY2(text.find("concurrent requests: 20 requests → 162 requests") != std::string::npos,
                 text.c_str());
    }

    void exportFormats() {
        const Scenario s = scenario("llama-3-70b", 8);
        auto r = evaluate(s.model, s.gpu, s.deployment);
        QVERIFY(r.ok());
        const QString csv = QString::fromStdString(reportCsv(r.value()));
        QVERIFY(csv.startsWith(QStringLiteral("key,label,value,unit\n")));
        QVERIFY2(csv.contains(
                     QStringLiteral("\nmax_concurrency,Concurrent requests at S,162,requests\n")),
                 qPrintable(csv));
        QVERIFY(csv.contains(QStringLiteral("\ncell_bytes_per_token_per_rank,")));
        const QString md = QString::fromStdString(reportMarkdown(s.model, s.gpu, r.value()));
        QVERIFY(md.contains(QStringLiteral("| Quantity | Value |")));
        QVERIFY(md.contains(QStringLiteral("| Concurrent requests at S | 162 requests |")));
        QVERIFY(QJsonDocument::fromJson(
                    QByteArray::fromStdString(reportJson(s.model, s.gpu, r.value())))
                    .isObject());
        QCOMPARE(reportNumber(r.value(), "cell_bytes_per_token_per_rank").value_or(0), 40960.0);
        QVERIFY(!reportNumber(r.value(), "no_such_number"));
        QCOMPARE(QString::fromStdString(csvField("a,b")), QStringLiteral("\"a,b\""));
        QCOMPARE(QString::fromStdString(markdownCell("a|b")), QStringLiteral("a\\|b"));
    }

    void cli_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("needle");
        QTest::newRow("mha vs gqa8 json")
            << QStringList{QStringLiteral("compare"),
                           QStringLiteral("--a"),
                           QStringLiteral(
                               "--model llama-3-70b --tp 8 --h-kv 64 --pool-model datasheet"),
                           QStringLiteral("--b"),
                           QStringLiteral("--model llama-3-70b --tp 8 --pool-model datasheet"),
                           QStringLiteral("--json")}
            << 0 << "ratios";
        QTest::newRow("text") << QStringList{QStringLiteral("compare"), QStringLiteral("--a"),
                                             QStringLiteral("--model llama-3-70b --tp 8"),
                                             QStringLiteral("--b"),
                                             QStringLiteral("--model llama-3-70b --tp 4")}
                              << 0 << "bytes per token per rank";
        // The GQA paper's naming: Llama-3-8B (32 query heads, 8 KV heads) is GQA-8, not GQA-4.
        QTest::newRow("llama3-8b is gqa-8 by its kv groups")
            << QStringList{QStringLiteral("compare"), QStringLiteral("--a"),
                           QStringLiteral("--model llama-3-8b --h-kv 32"), QStringLiteral("--b"),
                           QStringLiteral("--model llama-3-8b --tp 4")}
            << 0 << ", GQA-8, h100-sxm, TP=4";
        QTest::newRow("bad tp in b")
            << QStringList{QStringLiteral("compare"), QStringLiteral("--a"),
                           QStringLiteral("--model llama-3-70b"), QStringLiteral("--b"),
                           QStringLiteral("--model llama-3-70b --tp x")}
            << 2 << "--b";
        QTest::newRow("unknown flag inside a")
            << QStringList{QStringLiteral("compare"), QStringLiteral("--a"),
                           QStringLiteral("--model llama-3-70b --colour red"),
                           QStringLiteral("--b"), QStringLiteral("--model llama-3-70b")}
            << 2 << "--a";
        QTest::newRow("missing b") << QStringList{QStringLiteral("compare"), QStringLiteral("--a"),
                                                  QStringLiteral("--model llama-3-70b")}
                                   << 2 << "--b";
        QTest::newRow("invalid tp for the model")
            << QStringList{QStringLiteral("compare"), QStringLiteral("--a"),
                           QStringLiteral("--model llama-3-70b --tp 3"), QStringLiteral("--b"),
                           QStringLiteral("--model llama-3-70b")}
            << 2 << "--a";
    }
    void cli() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, needle);
        const CliRun run = runCli(args);
        const QString& out = run.out;
        const QString& err = run.err;
        QVERIFY(run.finished);
        QCOMPARE(run.exitCode, exitCode);
        if (exitCode == 0) {
            QVERIFY2(out.contains(needle), qPrintable(out));
            QVERIFY(err.isEmpty());
            if (args.contains(QStringLiteral("--json"))) {
                const auto doc = QJsonDocument::fromJson(out.toUtf8());
                QVERIFY(doc.isObject());
                const double bytes = doc.object()[QStringLiteral("ratios")]
                                         .toObject()[QStringLiteral("bytes_per_token_per_rank")]
                                         .toObject()[QStringLiteral("ratio")]
                                         .toDouble();
                QCOMPARE(bytes, 0.125);
            }
        } else {
            QVERIFY(out.isEmpty());
            KVSCOPE_VERIFY_ONE_LINE_ERROR(run, needle);
        }
    }
};

QTEST_GUILESS_MAIN(TestCompare)
#include "tst_compare.moc"
