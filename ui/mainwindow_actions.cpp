// The window's menus, keyboard shortcuts and the dialogs they open (export, open config, the
// F1 list of every shortcut, generated from the registered actions).
#include "core/model/presets.h"
#include "ui/exporter.h"
#include "ui/mainwindow.h"
#include "ui/qstrings.h"
#include "ui/rooflineplot.h"
#include "ui/sidepanels.h"
#include "ui/theme.h"

#include <QAction>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QMenuBar>
#include <QMessageBox>
#include <QSet>
#include <QTableWidget>
#include <QVBoxLayout>
#include <functional>

namespace kvscope::ui {

void MainWindow::buildMenus() {
    fileMenu_ = menuBar()->addMenu(tr("&File"));
    viewMenu_ = menuBar()->addMenu(tr("&View"));
    toolsMenu_ = menuBar()->addMenu(tr("&Tools"));
    helpMenu_ = menuBar()->addMenu(tr("&Help"));

    auto* open =
        fileMenu_->addAction(tr("&Open config.json…"), this, &MainWindow::openConfigDialog);
    open->setShortcut(QKeySequence::Open);
    recentMenu_ = fileMenu_->addMenu(tr("Open &recent"));
    modelPanel_->setRecentMenu(recentMenu_);
    fileMenu_->addSeparator();
    auto* exportWin =
        fileMenu_->addAction(tr("&Export window…"), this, [this] { exportDialog(QString()); });
    exportWin->setShortcut(QKeySequence(tr("Ctrl+E")));
    QMenu* exportView = fileMenu_->addMenu(tr("Export &view"));
    const QList<QPair<QString, QString>> views = {
        {QStringLiteral("strips"), tr("KV strips…")},
        {QStringLiteral("numbers"), tr("Numbers…")},
        {QStringLiteral("roofline"), tr("Roofline…")},
        {QStringLiteral("capacity"), tr("Capacity vs TP…")},
        {QStringLiteral("intensity"), tr("Intensity vs TP…")},
        {QStringLiteral("step"), tr("Decode step…")}};
    for (const auto& [name, title] : views)
        exportView->addAction(title, this, [this, name = name] { exportDialog(name); });
    fileMenu_->addSeparator();
    auto* quit = fileMenu_->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    for (QDockWidget* d : findChildren<QDockWidget*>())
        viewMenu_->addAction(d->toggleViewAction());
    viewMenu_->addSeparator();
    auto* dark = viewMenu_->addAction(tr("&Dark palette"));
    dark->setCheckable(true);
    dark->setChecked(currentTheme() == ThemeMode::Dark);
    dark->setShortcut(QKeySequence(tr("Ctrl+Shift+L")));
    connect(dark, &QAction::toggled, this, &MainWindow::setTheme);

    auto* measured = toolsMenu_->addAction(tr("Show &measured points"));
    measured->setCheckable(true);
    measured->setChecked(roofline_->measuredVisible());
    measured->setShortcut(QKeySequence(Qt::Key_L));
    connect(measured, &QAction::toggled, roofline_, &RooflinePlot::setMeasuredVisible);
    connect(roofline_, &RooflinePlot::measuredVisibleChanged, measured, &QAction::setChecked);

    auto* shortcuts =
        helpMenu_->addAction(tr("&Keyboard shortcuts"), this, &MainWindow::showShortcuts);
    shortcuts->setShortcut(QKeySequence::HelpContents);
    helpMenu_->addAction(tr("&About kvscope"), this, [this] {
        QMessageBox::about(this, tr("About kvscope"),
                           tr("<b>kvscope</b><br>The memory physics of LLM attention, made "
                              "visible: MHA → MQA → GQA → MLA.<br>Every number comes from "
                              "kvscope's core, the same arithmetic as <tt>kvscope-cli</tt>."));
    });
}

void MainWindow::buildShortcuts() {
    QMenu* controlsMenu = viewMenu_->addMenu(tr("&Controls"));
    auto add = [&](const QString& title, const QKeySequence& key, auto fn) {
        auto* a = controlsMenu->addAction(title);
        a->setShortcut(key);
        a->setShortcutContext(Qt::WindowShortcut);
        connect(a, &QAction::triggered, this, fn);
        addAction(a);
    };
    auto stepper = [this](Control c, int d) { return [this, c, d] { controls_->step(c, d); }; };
    add(tr("Fewer KV heads (towards MQA, MLA)"), QKeySequence(Qt::Key_H),
        stepper(Control::KvHeads, +1));
    add(tr("More KV heads (towards MHA)"), QKeySequence(Qt::SHIFT | Qt::Key_H),
        stepper(Control::KvHeads, -1));
    add(tr("Smaller TP"), QKeySequence(Qt::Key_T), stepper(Control::Tp, -1));
    add(tr("Larger TP"), QKeySequence(Qt::SHIFT | Qt::Key_T), stepper(Control::Tp, +1));
    add(tr("Smaller DCP"), QKeySequence(Qt::Key_P), stepper(Control::Dcp, -1));
    add(tr("Larger DCP"), QKeySequence(Qt::SHIFT | Qt::Key_P), stepper(Control::Dcp, +1));
    add(tr("Shorter context"), QKeySequence(Qt::Key_C), stepper(Control::Context, -1));
    add(tr("Longer context"), QKeySequence(Qt::SHIFT | Qt::Key_C), stepper(Control::Context, +1));
    add(tr("Smaller batch"), QKeySequence(Qt::Key_B), stepper(Control::Batch, -1));
    add(tr("Larger batch"), QKeySequence(Qt::SHIFT | Qt::Key_B), stepper(Control::Batch, +1));
    add(tr("Next KV dtype"), QKeySequence(Qt::Key_D), stepper(Control::KvDtype, +1));
    add(tr("Previous KV dtype"), QKeySequence(Qt::SHIFT | Qt::Key_D),
        stepper(Control::KvDtype, -1));
    add(tr("Lower GPU memory utilisation"), QKeySequence(Qt::Key_U), stepper(Control::Util, -1));
    add(tr("Higher GPU memory utilisation"), QKeySequence(Qt::SHIFT | Qt::Key_U),
        stepper(Control::Util, +1));
    add(tr("Toggle the pool model (vLLM / datasheet)"), QKeySequence(Qt::Key_M),
        stepper(Control::PoolModel, +1));
    add(tr("Next model preset"), QKeySequence(Qt::Key_BracketRight),
        [this] { stepModelPreset(+1); });
    add(tr("Previous model preset"), QKeySequence(Qt::Key_BracketLeft),
        [this] { stepModelPreset(-1); });
    add(tr("Next GPU preset"), QKeySequence(Qt::Key_G), [this] { stepGpuPreset(+1); });
    add(tr("Previous GPU preset"), QKeySequence(Qt::SHIFT | Qt::Key_G),
        [this] { stepGpuPreset(-1); });
    auto* esc = new QAction(tr("Dismiss the banner"), this);
    esc->setShortcut(QKeySequence(Qt::Key_Escape));
    connect(esc, &QAction::triggered, this, &MainWindow::hideBanner);
    addAction(esc);
}

namespace {
/// The id of the preset `delta` steps from `current` in the list, wrapping round (from the
/// first when `current` is none of them); "" for an empty list.
std::string steppedPresetId(const std::vector<PresetInfo>& presets, const std::string& current,
                            int delta) {
    if (presets.empty())
        return {};
    int i = 0;
    for (int k = 0; k < static_cast<int>(presets.size()); ++k)
        if (presets[static_cast<std::size_t>(k)].id == current)
            i = k;
    const int n = static_cast<int>(presets.size());
    i = ((i + delta) % n + n) % n;
    return presets[static_cast<std::size_t>(i)].id;
}
} // namespace

void MainWindow::stepModelPreset(int delta) {
    if (const std::string id = steppedPresetId(modelPresets(), state_.modelRef, delta); !id.empty())
        loadModelRef(q(id));
}

void MainWindow::stepGpuPreset(int delta) {
    if (const std::string id = steppedPresetId(gpuPresets(), state_.gpu.id, delta); !id.empty())
        loadGpuRef(q(id));
}

void MainWindow::openConfigDialog() {
    const QString dir = recent_.isEmpty() ? QString() : QFileInfo(recent_.first()).absolutePath();
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open a HuggingFace config.json"), dir,
                                     tr("Model configs (*.json);;All files (*)"));
    if (!path.isEmpty())
        loadModelRef(path);
}

void MainWindow::exportDialog(const QString& view) {
    const QString base =
        view.isEmpty() ? QStringLiteral("kvscope") : QStringLiteral("kvscope-") + view;
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export"), base + QStringLiteral(".png"), exportFilter());
    if (path.isEmpty())
        return;
    const bool ok = view.isEmpty() ? exportWindow(path) : exportView(view, path);
    if (!ok)
        showBanner(tr("Export failed: %1").arg(path), true);
}

bool MainWindow::exportWindow(const QString& path) {
    renderNow();
    return exportWidget(this, path);
}

bool MainWindow::exportView(const QString& name, const QString& path) {
    renderNow();
    return exportWidget(viewWidget(name), path);
}

QList<QPair<QString, QString>> MainWindow::shortcutList() const {
    QList<QPair<QString, QString>> out;
    QSet<QString> seen;
    std::function<void(const QList<QAction*>&)> collect = [&](const QList<QAction*>& actions) {
        for (QAction* a : actions) {
            if (a->menu())
                collect(a->menu()->actions());
            if (a->isSeparator() || a->shortcuts().isEmpty())
                continue;
            QStringList keys;
            for (const QKeySequence& k : a->shortcuts())
                keys << k.toString(QKeySequence::NativeText);
            QString text = a->text();
            text.remove(QLatin1Char('&'));
            if (text.endsWith(QStringLiteral("…")))
                text.chop(1);
            if (text.isEmpty())
                text = a->toolTip();
            const QString key = keys.join(QStringLiteral(", "));
            if (seen.contains(key + text))
                continue;
            seen.insert(key + text);
            out.append({key, text});
        }
    };
    for (QMenu* m : {fileMenu_, viewMenu_, toolsMenu_, helpMenu_})
        if (m)
            collect(m->actions());
    for (QAction* a : menuBar()->actions()) // menus the features added
        if (a->menu() && a->menu() != fileMenu_ && a->menu() != viewMenu_ &&
            a->menu() != toolsMenu_ && a->menu() != helpMenu_)
            collect(a->menu()->actions());
    collect(actions());
    return out;
}

void MainWindow::showShortcuts() {
    // Generated from the window's actions when shown: whatever a feature installed is listed.
    const QList<QPair<QString, QString>> list = shortcutList();
    QDialog dlg(this);
    dlg.setWindowTitle(tr("Keyboard shortcuts"));
    auto* v = new QVBoxLayout(&dlg);
    auto* table = new QTableWidget(static_cast<int>(list.size()), 2, &dlg);
    table->setObjectName(QStringLiteral("shortcutTable"));
    table->setHorizontalHeaderLabels({tr("Key"), tr("Action")});
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    for (int i = 0; i < list.size(); ++i) {
        auto* k = new QTableWidgetItem(list[i].first);
        k->setFont(scaledFont(font(), 1.0, true));
        table->setItem(i, 0, k);
        table->setItem(i, 1, new QTableWidgetItem(list[i].second));
    }
    table->resizeColumnsToContents();
    table->horizontalHeader()->setStretchLastSection(true);
    v->addWidget(table);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, &dlg);
    connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
    v->addWidget(buttons);
    dlg.resize(560, 640);
    dlg.exec();
}

} // namespace kvscope::ui
