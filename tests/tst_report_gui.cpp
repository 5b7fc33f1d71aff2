// The report's field list as the GUI shows it (core/features/report_fields.h): the PDF rows are
// the list's rows, and the numbers panel's values, its change line and its fit on screen come
// from the list. Cases are real models: the presets and the 2026 fixture configs; the window
// runs offscreen.
#include "core/features/compare.h"
#include "core/features/report_fields.h"
#include "core/format.h"
#include "core/model/gpu.h"
#include "testutils.h"
#include "ui/appstate.h"
#include "ui/features.h"
#include "ui/mainwindow.h"
#include "ui/numberspanel.h"
#include "ui/presentation.h"
#include "ui/reportpdf.h"

#include <QApplication>
#include <QScrollArea>
#include <QScrollBar>
#include <QtTest/QtTest>
#include <memory>

using namespace kvscope;

class TestReportGui : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void pdfRowsAreFieldRows();
    void panelValuesComeFromFields_data();
    void panelValuesComeFromFields();
    void panelChangeUsesThePhraser();
    void panelFitsWithoutScrolling_data();
    void panelFitsWithoutScrolling();
};

namespace {

std::unique_ptr<ui::MainWindow> window(const QString& modelRef, int w, int h) {
    auto win = std::make_unique<ui::MainWindow>(ui::MainWindow::Options{false, false});
    win->resize(w, h);
    ui::installFeatures(*win, ui::FeatureOptions{});
    win->show();
    const QString ref = modelRef.startsWith(QLatin1String("2026:"))
                            ? QStringLiteral(KVSCOPE_FIXTURES_2026_DIR "/") + modelRef.mid(5)
                            : modelRef;
    QString error;
    if (!win->loadModelRef(ref, &error))
        qFatal("%s: %s", qPrintable(ref), qPrintable(error));
    win->renderNow();
    return win;
}

} // namespace

void TestReportGui::pdfRowsAreFieldRows() {
    const ModelSpec m = test::modelRef(QStringLiteral("2026:openai__gpt-oss-20b.json"));
    const GpuSpec g = test::gpu("h100-sxm");
    const Report r = test::evalAt(m, g, 1);
    const auto fields = reportFields(r, &m, &g);
    std::size_t next = 0;
    for (const ui::PdfRow& row : ui::reportPdfRows(m, g, r)) {
        if (row.heading) {
            QVERIFY(next < fields.size());
            QCOMPARE(row.label.toStdString(), fields[next].section);
            continue;
        }
        QVERIFY(next < fields.size());
        QCOMPARE(row.key.toStdString(), fields[next].key);
        QCOMPARE(row.label.toStdString(), fields[next].label);
        QCOMPARE(row.value.toStdString(), formatFieldHuman(fields[next]));
        ++next;
    }
    QCOMPARE(next, fields.size());
}

void TestReportGui::panelValuesComeFromFields_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("hybrid");
    QTest::newRow("llama-3-70b") << "llama-3-70b" << false;
    QTest::newRow("gemma-3-27b") << "2026:google__gemma-3-27b-it.json" << true;
    QTest::newRow("gpt-oss-20b") << "2026:openai__gpt-oss-20b.json" << true;
    QTest::newRow("nemotron-h") << "2026:nvidia__Nemotron-H-56B-Base-8K.json" << true;
    QTest::newRow("qwen3.5") << "2026:Qwen__Qwen3.5-35B-A3B.json" << true;
}

void TestReportGui::panelValuesComeFromFields() {
    QFETCH(QString, model);
    QFETCH(bool, hybrid);
    auto w = window(model, 1600, 1000);
    const ui::AppState& s = w->state();
    const auto fields = reportFields(w->report(), &s.model, &s.gpu);
    const ui::NumbersPanel* p = w->numbersPanel();
    // Headline values are their field's human text (a count may drop its unit).
    for (const char* key : {"cellModel", "cellRank", "requestModel", "requestRank", "pool",
                            "tokens", "concurrency", "stepKv"}) {
        const QStringList used = p->valueFields(QLatin1String(key));
        QVERIFY2(!used.isEmpty(), key);
        const QString shown = p->valueText(QLatin1String(key));
        bool fromAField = false;
        for (const QString& k : used) {
            const ReportField* f = findField(fields, k.toStdString());
            QVERIFY2(f, qPrintable(k));
            const QString human = QString::fromStdString(formatFieldHuman(*f));
            fromAField = fromAField || human.startsWith(shown) || shown.contains(human);
        }
        QVERIFY2(fromAField, qPrintable(shown));
    }
    for (const QString& key :
         {QStringLiteral("poolBreakdown"), QStringLiteral("gpu"), QStringLiteral("groups")})
        for (const QString& used : p->valueFields(key))
            QVERIFY2(findField(fields, used.toStdString()), qPrintable(used));
    // The GPU line: every GPU row marked for the panel, as "label value", its source in the
    // tooltip (the L2 size from the preset: 50 MiB on the H100 SXM default).
    for (const ReportField& f : fields)
        if (f.section == "GPU" && f.panel) {
            const QString shown = QString::fromStdString(f.label + " " + formatFieldHuman(f));
            QVERIFY2(p->valueText(QStringLiteral("gpu")).contains(shown), qPrintable(shown));
            QVERIFY(p->valueFields(QStringLiteral("gpu")).contains(QString::fromStdString(f.key)));
            if (!f.source.empty())
                QVERIFY(
                    p->valueTip(QStringLiteral("gpu")).contains(QString::fromStdString(f.source)));
        }
    QVERIFY(p->valueText(QStringLiteral("gpu")).contains(QStringLiteral("L2 cache 50 MiB")));
    // Hybrid models: one line per layer group, each share as its field shows it.
    QCOMPARE(p->groupsShown(), hybrid);
    if (!hybrid)
        return;
    const QString groups = p->valueText(QStringLiteral("groups"));
    qsizetype holding = 0; // groups that hold anything for a request (not MLP-only layers)
    for (std::size_t i = 0; i < s.model.layerGroups.size(); ++i) {
        bool any = false;
        for (const char* part :
             {"growing_bytes_per_rank", "capped_bytes_per_rank", "fixed_bytes_per_rank"}) {
            const ReportField* f = findField(fields, layerGroupKey(i, part));
            QVERIFY(f && f->value);
            if (*f->value > 0)
                QVERIFY2(groups.contains(QString::fromStdString(formatFieldHuman(*f))),
                         qPrintable(groups));
            any = any || *f->value > 0;
        }
        holding += any ? 1 : 0;
    }
    QCOMPARE(groups.split(QLatin1Char('\n')).size(), holding);
}

void TestReportGui::panelChangeUsesThePhraser() {
    // Llama-3-70B TP 8, 8,192 → 8,320 tokens: 162 → 159 concurrent requests. The panel said
    // "1.9% fewer", the compare table "×1.02 fewer": both say core's phrase now.
    const ModelSpec m = test::modelRef(QStringLiteral("llama-3-70b"));
    const GpuSpec g = test::gpu("h100-sxm");
    Deployment d;
    d.tp = 8;
    d.poolModel = PoolModel::Datasheet;
    const Report a = evaluate(m, g, d).value();
    d.context = 8320;
    const Report b = evaluate(m, g, d).value();
    QCOMPARE(a.maxConcurrency, 162LL);
    ui::NumbersPanel p;
    p.setReport(b, a, &m, &g);
    const std::string counts =
        " (" + withCommas(a.maxConcurrency) + " → " + withCommas(b.maxConcurrency) + ")";
    const QString want =
        QString::fromStdString(phraseRatio(static_cast<double>(b.maxConcurrency) / a.maxConcurrency,
                                           "concurrent requests" + counts, "more", "fewer"));
    QVERIFY2(p.valueText(QStringLiteral("delta")).split(QLatin1Char('\n')).contains(want),
             qPrintable(p.valueText(QStringLiteral("delta")) + QStringLiteral(" / ") + want));
    QVERIFY(want.startsWith(QStringLiteral("×1.02 fewer")));
}

void TestReportGui::panelFitsWithoutScrolling_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("present");
    for (const char* m : {"llama-3-70b", "deepseek-v3", "2026:nvidia__Nemotron-H-56B-Base-8K.json",
                          "2026:google__gemma-3-27b-it.json"}) {
        QTest::newRow((QString::fromLatin1(m) + QStringLiteral(" 1600x1000")).toLatin1())
            << QString::fromLatin1(m) << false;
        QTest::newRow((QString::fromLatin1(m) + QStringLiteral(" present 1920x1080")).toLatin1())
            << QString::fromLatin1(m) << true;
    }
}

void TestReportGui::panelFitsWithoutScrolling() {
    QFETCH(QString, model);
    QFETCH(bool, present);
    auto w = window(model, present ? 1920 : 1600, present ? 1080 : 1000);
    if (present) {
        ui::features(*w)->presentation()->setActive(true, false);
        w->renderNow();
    }
    QApplication::processEvents();
    QScrollArea* scroll = nullptr;
    for (QWidget* p = w->numbersPanel()->parentWidget(); p && !scroll; p = p->parentWidget())
        scroll = qobject_cast<QScrollArea*>(p);
    QVERIFY(scroll);
    QVERIFY(scroll->isVisible());
    QCOMPARE(scroll->verticalScrollBar()->maximum(), 0);
}

QTEST_MAIN(TestReportGui)
#include "tst_report_gui.moc"
