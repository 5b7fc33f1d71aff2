#include "ui/features.h"

#include "core/features/export.h"
#include "core/features/story.h"
#include "ui/compare.h"
#include "ui/explainlog.h"
#include "ui/mainwindow.h"
#include "ui/measure.h"
#include "ui/plan.h"
#include "ui/presentation.h"
#include "ui/qstrings.h"
#include "ui/reportpdf.h"
#include "ui/session.h"
#include "ui/story.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QMenu>
#include <QStatusBar>

namespace kvscope::ui {

namespace {
bool writeText(const QString& path, const std::string& text, QString* error) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
        f.write(text.data(), static_cast<qint64>(text.size())) !=
            static_cast<qint64>(text.size())) {
        if (error)
            *error = QObject::tr("%1: cannot be written").arg(path);
        return false;
    }
    return true;
}

// An action with its shortcuts in `menu` (before `before` when given), and on the window as
// well: its shortcuts then work wherever the focus is, even with no menu to hold it.
template <typename Fn>
QAction* addMenuAction(MainWindow& w, QMenu* menu, const QString& text, QList<QKeySequence> keys,
                       Fn fn, QAction* before = nullptr) {
    auto* a = new QAction(text, menu ? static_cast<QObject*>(menu) : &w);
    a->setShortcuts(keys);
    QObject::connect(a, &QAction::triggered, &w, fn);
    if (menu) {
        if (before)
            menu->insertAction(before, a);
        else
            menu->addAction(a);
    }
    w.addAction(a);
    return a;
}

void bannerOr(MainWindow& w, bool ok, const QString& what, const QString& err) {
    if (ok)
        w.showBanner(what, false);
    else
        w.showBanner(err, true);
}
} // namespace

Features::Features(MainWindow& w) : QObject(&w), w_(w) {
    setObjectName(QStringLiteral("kvscopeFeatures"));
    compare_ = new CompareController(w);
    story_ = new StoryController(w, compare_);
    measure_ = new MeasureController(w);
    presentation_ = new PresentationController(w);
    w.statusBar()->addPermanentWidget(measure_->progressWidget());
    installActions();
}

void Features::installActions() {
    installFileActions();
    installViewActions();
    installToolsActions();
}

void Features::installFileActions() {
    // File: sessions, the Hugging Face cache, export.
    MainWindow& w = w_;
    QMenu* file = w.menu(QStringLiteral("File"));
    QAction* quit = file && !file->actions().isEmpty() ? file->actions().constLast() : nullptr;
    if (file && quit)
        file->insertSeparator(quit);
    addMenuAction(
        w, file, tr("Open &session…"), {QKeySequence(tr("Ctrl+Shift+O"))},
        [this, &w] {
            const QString path = QFileDialog::getOpenFileName(&w, tr("Open a kvscope session"), {},
                                                              tr("kvscope sessions (*.json)"));
            QString err;
            if (!path.isEmpty() && !openSession(path, &err))
                w.showBanner(err, true);
        },
        quit);
    addMenuAction(
        w, file, tr("Sa&ve session…"), {QKeySequence::Save},
        [this, &w] {
            const QString path = QFileDialog::getSaveFileName(&w, tr("Save the session"),
                                                              QStringLiteral("session.json"),
                                                              tr("kvscope sessions (*.json)"));
            QString err;
            if (!path.isEmpty())
                bannerOr(w, saveSession(path, &err), tr("Saved %1").arg(path), err);
        },
        quit);
    addMenuAction(
        w, file, tr("Open model from the &Hugging Face cache…"), {QKeySequence(tr("Ctrl+Shift+H"))},
        [&w] { openFromHuggingFaceCache(w); }, quit);
    if (file && quit)
        file->insertSeparator(quit);
    addMenuAction(
        w, file, tr("Export &report (PDF)…"), {QKeySequence(tr("Ctrl+Shift+E"))},
        [this, &w] {
            const QString path = QFileDialog::getSaveFileName(&w, tr("Export a one-page report"),
                                                              QStringLiteral("kvscope-report.pdf"),
                                                              tr("PDF (*.pdf)"));
            QString err;
            if (!path.isEmpty())
                bannerOr(w, exportPdf(path, &err), tr("Wrote %1").arg(path), err);
        },
        quit);
    addMenuAction(
        w, file, tr("Export &numbers (CSV, JSON, Markdown)…"), {QKeySequence(tr("Ctrl+Alt+E"))},
        [this, &w] {
            const QString path = QFileDialog::getSaveFileName(
                &w, tr("Export the numbers"), QStringLiteral("kvscope.csv"),
                tr("CSV (*.csv);;JSON (*.json);;Markdown (*.md)"));
            QString err;
            if (!path.isEmpty())
                bannerOr(w, exportNumbers(path, &err), tr("Wrote %1").arg(path), err);
        },
        quit);
    addMenuAction(
        w, file, tr("&Copy numbers (Markdown)"), {QKeySequence(tr("Ctrl+Shift+C"))},
        [this, &w] {
            copyNumbers();
            w.showBanner(tr("The numbers are on the clipboard as a Markdown table"), false);
        },
        quit);
    if (file && quit)
        file->insertSeparator(quit);
}

void Features::installViewActions() {
    // View: story mode and presentation mode.
    MainWindow& w = w_;
    QMenu* view = w.menu(QStringLiteral("View"));
    QMenu* storyMenu = view ? view->addMenu(tr("&Story")) : nullptr;
    if (view)
        view->insertSeparator(storyMenu->menuAction());
    installStoryActions(storyMenu);
    auto* present =
        addMenuAction(w, view, tr("&Presentation mode"), {QKeySequence(Qt::Key_F5)}, [this] {
            presentation_->setActive(!presentation_->active(),
                                     QGuiApplication::platformName() != QLatin1String("offscreen"));
        });
    present->setCheckable(true);
    connect(present, &QAction::triggered, present,
            [this, present] { present->setChecked(presentation_->active()); });
    addMenuAction(w, view, tr("Shortcut &overlay"), {QKeySequence(Qt::Key_Question)},
                  [this] { presentation_->toggleHelp(); });
}

void Features::installStoryActions(QMenu* storyMenu) {
    MainWindow& w = w_;
    for (const std::string& name : builtinStories())
        addMenuAction(w, storyMenu, tr("Play “%1”").arg(q(name)),
                      name == "chapter" ? QList<QKeySequence>{QKeySequence(tr("Ctrl+Shift+Y"))}
                                        : QList<QKeySequence>{},
                      [this, n = q(name)] { story_->loadBuiltin(n); });
    addMenuAction(w, storyMenu, tr("Open story file…"), {}, [this, &w] {
        const QString path =
            QFileDialog::getOpenFileName(&w, tr("Open a story"), {}, tr("Stories (*.json)"));
        if (!path.isEmpty())
            story_->loadFile(path);
    });
    if (storyMenu)
        storyMenu->addSeparator();
    QList<QAction*> nav;
    nav << addMenuAction(
        w, storyMenu, tr("Next step"),
        {QKeySequence(Qt::Key_Right), QKeySequence(Qt::Key_PageDown), QKeySequence(Qt::Key_Space)},
        [this] { story_->next(); });
    nav << addMenuAction(w, storyMenu, tr("Previous step"),
                         {QKeySequence(Qt::Key_Left), QKeySequence(Qt::Key_PageUp)},
                         [this] { story_->prev(); });
    nav << addMenuAction(w, storyMenu, tr("First step"), {QKeySequence(Qt::Key_Home)},
                         [this] { story_->first(); });
    nav << addMenuAction(w, storyMenu, tr("Last step"), {QKeySequence(Qt::Key_End)},
                         [this] { story_->last(); });
    nav << addMenuAction(w, storyMenu, tr("Close the story"), {QKeySequence(tr("Ctrl+Shift+W"))},
                         [this] { story_->close(); });
    // The arrows belong to the sliders unless a story runs.
    for (QAction* a : nav)
        a->setEnabled(false);
    connect(story_, &StoryController::activeChanged, this, [nav](bool on) {
        for (QAction* a : nav)
            a->setEnabled(on);
    });
}

void Features::installToolsActions() {
    // Tools: compare, measure, plan, explain.
    MainWindow& w = w_;
    QMenu* tools = w.menu(QStringLiteral("Tools"));
    if (tools)
        tools->addSeparator();
    addMenuAction(w, tools, tr("Pin current as &A (compare)"), {QKeySequence(Qt::Key_A)},
                  [this] { compare_->pinCurrent(); });
    addMenuAction(w, tools, tr("Unpin A"), {QKeySequence(Qt::SHIFT | Qt::Key_A)},
                  [this] { compare_->unpin(); });
    if (tools)
        tools->addSeparator();
    addMenuAction(w, tools, tr("&Measure this model (CPU, or CUDA when present)"),
                  {QKeySequence(tr("Ctrl+M"))}, [this, &w] {
                      const MeasureJob job = measure_->jobForCurrentState();
                      if (job.shapes.empty())
                          w.showBanner(tr("Measure: no variant of this model fits the kernels"),
                                       true);
                      else
                          measure_->start(job);
                  });
    addMenuAction(w, tools, tr("Cancel the measurement"), {QKeySequence(tr("Ctrl+."))},
                  [this] { measure_->cancel(); });
    addMenuAction(w, tools, tr("Load measurements…"), {}, [this, &w] {
        const QString path = QFileDialog::getOpenFileName(&w, tr("Load a measurement file"), {},
                                                          tr("Measurements (*.json)"));
        QString err;
        if (!path.isEmpty() && !measure_->loadJson(path, &err))
            w.showBanner(tr("Measurements: %1").arg(err), true);
    });
    addMenuAction(w, tools, tr("Save measurements…"), {}, [this, &w] {
        if (!measure_->hasResults()) {
            w.showBanner(tr("Measurements: nothing measured or loaded yet"), true);
            return;
        }
        const QString path = QFileDialog::getSaveFileName(&w, tr("Save the measurements"),
                                                          QStringLiteral("measurements.json"),
                                                          tr("Measurements (*.json)"));
        QString err;
        if (!path.isEmpty())
            bannerOr(w, measure_->saveJson(path, &err), tr("Wrote %1").arg(path),
                     tr("Measurements: %1").arg(err));
    });
    if (tools)
        tools->addSeparator();
    addMenuAction(w, tools, tr("&Plan a deployment…"), {QKeySequence(tr("Ctrl+Shift+P"))}, [&w] {
        auto* dlg = new PlanDialog(w.state(), &w);
        dlg->setAttribute(Qt::WA_DeleteOnClose);
        connect(dlg, &PlanDialog::applyRequested, &w, [&w](const AppState& s) {
            QString err;
            if (!w.applyState(s, &err))
                w.showBanner(err, true);
        });
        dlg->show();
    });
    addMenuAction(w, tools, tr("&Explain an engine log…"), {QKeySequence(tr("Ctrl+Shift+X"))},
                  [&w] {
                      auto* dlg = new ExplainLogDialog(&w);
                      dlg->setAttribute(Qt::WA_DeleteOnClose);
                      dlg->show();
                  });
}

bool Features::openSession(const QString& path, QString* error) {
    QString err;
    if (!loadWindowSession(w_, path, &err)) {
        if (error)
            *error = tr("Session %1: %2").arg(QFileInfo(path).fileName(), err);
        return false;
    }
    return true;
}

bool Features::saveSession(const QString& path, QString* error) {
    QString err;
    if (!saveWindowSession(w_, path, &err)) {
        if (error)
            *error = tr("Session: %1").arg(err);
        return false;
    }
    return true;
}

bool Features::exportPdf(const QString& path, QString* error) {
    return writeReportPdf(w_, path, error);
}

bool Features::exportNumbers(const QString& path, QString* error) {
    const auto& s = w_.state();
    const QString lower = path.toLower();
    if (lower.endsWith(QLatin1String(".csv")))
        return writeText(path, reportCsv(s.model, s.gpu, w_.report()), error);
    if (lower.endsWith(QLatin1String(".json")))
        return writeText(path, reportJson(s.model, s.gpu, w_.report()), error);
    if (lower.endsWith(QLatin1String(".md")) || lower.endsWith(QLatin1String(".markdown")))
        return writeText(path, reportMarkdown(s.model, s.gpu, w_.report()), error);
    if (error)
        *error = tr("%1: the suffix must be .csv, .json or .md").arg(path);
    return false;
}

void Features::copyNumbers() {
    const auto& s = w_.state();
    QGuiApplication::clipboard()->setText(q(reportMarkdown(s.model, s.gpu, w_.report())));
}

Features* features(const MainWindow& w) {
    return w.findChild<Features*>(QStringLiteral("kvscopeFeatures"), Qt::FindDirectChildrenOnly);
}

Features* installFeatures(MainWindow& w, const FeatureOptions& o, QString* error) {
    Features* f = features(w);
    if (!f)
        f = new Features(w);
    QString first;
    auto note = [&](const QString& e) {
        if (first.isEmpty())
            first = e;
        w.showBanner(e, true);
    };
    if (!o.sessionPath.isEmpty()) {
        QString err;
        if (!f->openSession(o.sessionPath, &err))
            note(QStringLiteral("--session: ") + err);
    }
    if (!o.storyPath.isEmpty()) {
        QString err;
        const bool isFile = QFileInfo::exists(o.storyPath);
        const bool ok = isFile ? f->story()->loadFile(o.storyPath, &err)
                               : f->story()->loadBuiltin(o.storyPath, &err);
        if (!ok) {
            note(QStringLiteral("--story: ") + err);
        } else if (o.step) {
            if (*o.step < 1 || *o.step > f->story()->count())
                note(QStringLiteral("--step: must be between 1 and %1 (the story's steps)")
                         .arg(f->story()->count()));
            else if (!f->story()->goTo(*o.step - 1, &err))
                note(QStringLiteral("--step: ") + err);
        }
    } else if (o.step) {
        note(QStringLiteral("--step: needs --story"));
    }
    if (!o.measurementsPath.isEmpty()) {
        QString err;
        if (!f->measure()->loadJson(o.measurementsPath, &err))
            note(QStringLiteral("--measurements: ") + err);
    }
    if (o.present)
        f->presentation()->setActive(true,
                                     QGuiApplication::platformName() != QLatin1String("offscreen"));
    if (!first.isEmpty()) {
        if (error)
            *error = first;
        w.showBanner(first, true);
    }
    return f;
}

} // namespace kvscope::ui
