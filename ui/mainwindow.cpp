#include "ui/mainwindow.h"

#include "core/format.h"
#include "core/model/presets.h"
#include "ui/exporter.h"
#include "ui/kvstripsview.h"
#include "ui/layerribbon.h"
#include "ui/numberspanel.h"
#include "ui/rooflineplot.h"
#include "ui/session.h"
#include "ui/sidepanels.h"
#include "ui/stepplot.h"
#include "ui/theme.h"
#include "ui/tpplots.h"
#include "ui/viewmodel.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPushButton>
#include <QScrollArea>
#include <QSet>
#include <QSettings>
#include <QSlider>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <functional>

namespace kvscope::ui {

namespace {
QString q(const std::string& s) {
    return QString::fromStdString(s);
}
std::string s8(const QString& s) {
    return s.toStdString();
}
constexpr int kMaxRecent = 8;

QString modelTitle(const AppState& s) {
    return q(modelDisplayName(s.modelRef, s.model));
}
} // namespace

MainWindow::MainWindow(QWidget* parent) : MainWindow(Options{}, parent) {}

MainWindow::MainWindow(Options options, QWidget* parent) : QMainWindow(parent), options_(options) {
    setWindowTitle(tr("kvscope — the memory physics of LLM attention"));
    setObjectName(QStringLiteral("kvscopeMainWindow"));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks);
    refreshTimer_.setSingleShot(true);
    refreshTimer_.setInterval(0);
    connect(&refreshTimer_, &QTimer::timeout, this, &MainWindow::refreshNow);

    if (auto ref = loadModel("deepseek-v3"); ref.ok())
        mlaReference_ = std::move(ref).value();
    if (auto ref = loadModel(kDefaultModelId); ref.ok())
        gqaReference_ = std::move(ref).value();

    buildViews();
    buildMenus();
    buildShortcuts();
    if (options_.persist) {
        QSettings settings;
        recent_ = settings.value(QStringLiteral("recentFiles")).toStringList();
    }
    rebuildRecentMenu();

    // The default state: the chapter's model on the chapter's GPU.
    AppState s;
    auto m = loadModel(kDefaultModelId);
    auto g = loadGpu(kDefaultGpuId);
    if (m.ok() && g.ok()) {
        s.modelRef = kDefaultModelId;
        s.model = std::move(m).value();
        s.gpu = std::move(g).value();
        Deployment d;
        d.tp = 8; // the chapter's node: one KV head per GPU
        s.deployment = fitDeployment(s.model, s.gpu, d);
        QString err;
        if (!applyState(s, &err))
            showBanner(err, true);
    } else {
        showBanner(tr("The bundled presets could not be loaded: %1")
                       .arg(q(m.ok() ? g.error().message() : m.error().message())),
                   true);
    }
    if (options_.persist)
        loadSettings();
    else
        resize(1600, 1000);
}

MainWindow::~MainWindow() = default;

QWidget* MainWindow::wrapPlot(QWidget* plot, QWidget* header) {
    auto* w = new QWidget;
    auto* v = new QVBoxLayout(w);
    v->setContentsMargins(4, 2, 4, 4);
    v->setSpacing(2);
    if (header)
        v->addWidget(header);
    v->addWidget(plot, 1);
    return w;
}

void MainWindow::buildViews() {
    // Centre: the banner over the strips.
    auto* central = new QWidget(this);
    auto* cv = new QVBoxLayout(central);
    cv->setContentsMargins(0, 0, 0, 0);
    cv->setSpacing(0);
    banner_ = new QWidget(central);
    banner_->setObjectName(QStringLiteral("banner"));
    banner_->setAutoFillBackground(true);
    auto* bh = new QHBoxLayout(banner_);
    bh->setContentsMargins(14, 8, 8, 8);
    bannerLabel_ = new QLabel(banner_);
    bannerLabel_->setObjectName(QStringLiteral("bannerLabel"));
    bannerLabel_->setWordWrap(true);
    bannerLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    bannerLabel_->setFont(scaledFont(font(), 1.1, true));
    auto* close = new QToolButton(banner_);
    close->setText(QStringLiteral("✕"));
    close->setAutoRaise(true);
    close->setToolTip(tr("Dismiss (Esc)"));
    connect(close, &QToolButton::clicked, this, &MainWindow::hideBanner);
    bh->addWidget(bannerLabel_, 1);
    bh->addWidget(close);
    banner_->hide();
    cv->addWidget(banner_);
    ribbon_ = new LayerRibbon(central);
    ribbon_->setObjectName(QStringLiteral("layerRibbon"));
    cv->addWidget(ribbon_);
    strips_ = new KvStripsView(central);
    strips_->setObjectName(QStringLiteral("stripsView"));
    strips_->setAnimated(options_.animate);
    cv->addWidget(strips_, 1);
    setCentralWidget(central);

    auto dock = [this](const QString& title, const QString& name, QWidget* w,
                       Qt::DockWidgetArea area) {
        auto* d = new QDockWidget(title, this);
        d->setObjectName(name);
        d->setWidget(w);
        d->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                       QDockWidget::DockWidgetClosable);
        addDockWidget(area, d);
        return d;
    };
    setCorner(Qt::TopLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::TopRightCorner, Qt::RightDockWidgetArea);
    setCorner(Qt::BottomRightCorner, Qt::BottomDockWidgetArea);

    controls_ = new ControlsPanel;
    auto* controlsDock =
        dock(tr("Controls"), QStringLiteral("controlsDock"), controls_, Qt::LeftDockWidgetArea);
    modelPanel_ = new ModelPanel;
    auto* modelDock =
        dock(tr("Model"), QStringLiteral("modelDock"), modelPanel_, Qt::LeftDockWidgetArea);
    gpuPanel_ = new GpuPanel;
    auto* gpuDock = dock(tr("GPU"), QStringLiteral("gpuDock"), gpuPanel_, Qt::LeftDockWidgetArea);

    numbers_ = new NumbersPanel;
    numbers_->setObjectName(QStringLiteral("numbersPanel"));
    auto* scroll = new QScrollArea;
    scroll->setWidget(numbers_);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* numbersDock =
        dock(tr("Numbers"), QStringLiteral("numbersDock"), scroll, Qt::RightDockWidgetArea);

    roofline_ = new RooflinePlot;
    roofline_->setObjectName(QStringLiteral("rooflinePlot"));
    auto* measured = new QCheckBox(tr("measured points (L)"));
    measured->setObjectName(QStringLiteral("measuredToggle"));
    measured->setChecked(roofline_->measuredVisible());
    measured->setToolTip(tr("Show the measured decode steps and ceilings (kvscope-cli measure)"));
    connect(measured, &QCheckBox::toggled, roofline_, &RooflinePlot::setMeasuredVisible);
    connect(roofline_, &RooflinePlot::measuredVisibleChanged, measured, &QCheckBox::setChecked);
    auto* rh = new QWidget;
    auto* rhl = new QHBoxLayout(rh);
    rhl->setContentsMargins(4, 0, 4, 0);
    rhl->addStretch(1);
    rhl->addWidget(measured);
    auto* rooflineDock = dock(tr("Roofline"), QStringLiteral("rooflineDock"),
                              wrapPlot(roofline_, rh), Qt::BottomDockWidgetArea);

    capacity_ = new TpPlot(TpPlot::Kind::Capacity);
    capacity_->setObjectName(QStringLiteral("capacityPlot"));
    auto* metric = new QComboBox;
    metric->addItem(tr("tokens held"));
    metric->addItem(tr("concurrent requests"));
    connect(metric, &QComboBox::activated, this, [this](int i) {
        capacity_->setMetric(i == 0 ? TpPlot::Metric::Tokens : TpPlot::Metric::Concurrency);
    });
    auto* ch = new QWidget;
    auto* chl = new QHBoxLayout(ch);
    chl->setContentsMargins(4, 0, 4, 0);
    chl->addStretch(1);
    chl->addWidget(new QLabel(tr("show")));
    chl->addWidget(metric);
    auto* capacityDock = dock(tr("Capacity vs TP"), QStringLiteral("capacityDock"),
                              wrapPlot(capacity_, ch), Qt::BottomDockWidgetArea);
    intensity_ = new TpPlot(TpPlot::Kind::Intensity);
    intensity_->setObjectName(QStringLiteral("intensityPlot"));
    auto* intensityDock = dock(tr("Intensity vs TP"), QStringLiteral("intensityDock"),
                               wrapPlot(intensity_, nullptr), Qt::BottomDockWidgetArea);
    step_ = new StepPlot;
    step_->setObjectName(QStringLiteral("stepPlot"));
    auto* stepMode = new QComboBox;
    stepMode->addItems({tr("time per token"), tr("tokens/s per GPU"), tr("bytes (stacked)")});
    connect(stepMode, &QComboBox::activated, this,
            [this](int i) { step_->setMode(static_cast<StepPlot::Mode>(i)); });
    auto* sh = new QWidget;
    auto* shl = new QHBoxLayout(sh);
    shl->setContentsMargins(4, 0, 4, 0);
    shl->addStretch(1);
    shl->addWidget(new QLabel(tr("show")));
    shl->addWidget(stepMode);
    auto* stepDock = dock(tr("Decode step"), QStringLiteral("stepDock"), wrapPlot(step_, sh),
                          Qt::BottomDockWidgetArea);
    splitDockWidget(rooflineDock, capacityDock, Qt::Horizontal);
    splitDockWidget(capacityDock, intensityDock, Qt::Horizontal);
    splitDockWidget(controlsDock, modelDock, Qt::Vertical);
    tabifyDockWidget(modelDock, gpuDock);
    modelDock->raise();
    tabifyDockWidget(intensityDock, stepDock);
    intensityDock->raise();

    resizeDocks({controlsDock, numbersDock}, {370, 380}, Qt::Horizontal);
    resizeDocks({rooflineDock}, {400}, Qt::Vertical);
    resizeDocks({controlsDock, modelDock}, {270, 700}, Qt::Vertical);
    resizeDocks({rooflineDock, capacityDock, intensityDock}, {520, 360, 360}, Qt::Horizontal);

    connect(controls_, &ControlsPanel::deploymentRequested, this, &MainWindow::requestDeployment);
    for (QSlider* sl : controls_->findChildren<QSlider*>()) {
        connect(sl, &QSlider::sliderPressed, this, [this] { setDragging(true); });
        connect(sl, &QSlider::sliderReleased, this, [this] { setDragging(false); });
    }
    connect(modelPanel_, &ModelPanel::modelRequested, this,
            [this](const QString& ref) { loadModelRef(ref); });
    connect(modelPanel_, &ModelPanel::openRequested, this, &MainWindow::openConfigDialog);
    connect(gpuPanel_, &GpuPanel::gpuPresetRequested, this,
            [this](const QString& id) { loadGpuRef(id); });
    connect(gpuPanel_, &GpuPanel::customGpuEdited, this, &MainWindow::setGpu);
}

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

QMenu* MainWindow::menu(const QString& name) const {
    if (name == QLatin1String("File"))
        return fileMenu_;
    if (name == QLatin1String("View"))
        return viewMenu_;
    if (name == QLatin1String("Tools"))
        return toolsMenu_;
    if (name == QLatin1String("Help"))
        return helpMenu_;
    return nullptr;
}

QWidget* MainWindow::viewWidget(const QString& name) const {
    if (name == QLatin1String("strips"))
        return strips_;
    if (name == QLatin1String("numbers"))
        return numbers_;
    if (name == QLatin1String("roofline"))
        return roofline_;
    if (name == QLatin1String("capacity"))
        return capacity_;
    if (name == QLatin1String("intensity"))
        return intensity_;
    if (name == QLatin1String("step"))
        return step_;
    return nullptr;
}

bool MainWindow::applyState(const AppState& s, QString* error) {
    auto r = evaluate(s.model, s.gpu, s.deployment);
    if (!r.ok()) {
        if (error)
            *error = q(r.error().message());
        return false;
    }
    if (hasState_)
        previous_ = report_;
    state_ = s;
    report_ = std::move(r).value();
    hasState_ = true;
    Q_EMIT stateChanged(state_);
    if (!refreshTimer_.isActive())
        refreshTimer_.start();
    return true;
}

void MainWindow::requestDeployment(const Deployment& d) {
    AppState s = state_;
    s.deployment = fitDeployment(s.model, s.gpu, d);
    QString err;
    if (!applyState(s, &err)) {
        showBanner(err, true);
        controls_->setState(state_); // snap the slider back to the state that holds
    } else if (bannerVisible()) {
        hideBanner();
    }
}

void MainWindow::setGpu(const GpuSpec& gpu) {
    if (auto st = validateGpu(gpu); !st.ok()) {
        showBanner(tr("Custom GPU: %1").arg(q(st.error().message())), true);
        gpuPanel_->setState(state_);
        return;
    }
    AppState s = state_;
    s.gpu = gpu;
    s.deployment = fitDeployment(s.model, s.gpu, s.deployment);
    QString err;
    if (!applyState(s, &err))
        showBanner(err, true);
}

bool MainWindow::loadModelRef(const QString& idOrPath, QString* error) {
    auto m = loadModel(s8(idOrPath));
    if (!m.ok()) {
        const QString msg =
            tr("Could not load %1 — %2")
                .arg(QFileInfo(idOrPath).fileName().isEmpty() ? idOrPath
                                                              : QFileInfo(idOrPath).fileName(),
                     q(m.error().message()));
        if (error)
            *error = q(m.error().message());
        showBanner(msg + tr(" · the previous model stays loaded"), true);
        return false;
    }
    AppState s = state_;
    s.modelRef = s8(idOrPath);
    s.model = std::move(m).value();
    s.deployment = fitDeployment(s.model, s.gpu, state_.deployment);
    QString err;
    if (!applyState(s, &err)) {
        if (error)
            *error = err;
        showBanner(tr("%1 cannot be deployed: %2").arg(idOrPath, err), true);
        return false;
    }
    hideBanner();
    const bool preset = !modelPresetJson(s8(idOrPath)).empty();
    if (!preset)
        addRecent(QFileInfo(idOrPath).absoluteFilePath());
    return true;
}

bool MainWindow::loadGpuRef(const QString& idOrPath, QString* error) {
    auto g = loadGpu(s8(idOrPath));
    if (!g.ok()) {
        if (error)
            *error = q(g.error().message());
        showBanner(tr("Could not load GPU %1 — %2").arg(idOrPath, q(g.error().message())), true);
        return false;
    }
    AppState s = state_;
    s.gpu = std::move(g).value();
    s.deployment = fitDeployment(s.model, s.gpu, s.deployment);
    QString err;
    if (!applyState(s, &err)) {
        if (error)
            *error = err;
        showBanner(err, true);
        return false;
    }
    return true;
}

void MainWindow::showBanner(const QString& message, bool error) {
    const bool dk = isDark(this);
    QPalette p = banner_->palette();
    QColor bg = error ? errorColor(dk) : warningColor(dk);
    bg.setAlpha(255);
    p.setColor(QPalette::Window, dk ? bg.darker(260) : bg.lighter(185));
    p.setColor(QPalette::WindowText, dk ? bg.lighter(140) : bg.darker(140));
    banner_->setPalette(p);
    bannerLabel_->setPalette(p);
    bannerLabel_->setText((error ? QStringLiteral("⛔  ") : QStringLiteral("⚠  ")) + message);
    banner_->show();
}

void MainWindow::hideBanner() {
    banner_->hide();
}
bool MainWindow::bannerVisible() const {
    return !banner_->isHidden();
}
QString MainWindow::bannerText() const {
    return bannerLabel_->text();
}

void MainWindow::flushRefresh() {
    if (refreshTimer_.isActive()) {
        refreshTimer_.stop();
        refreshNow();
    }
}

void MainWindow::setDragging(bool dragging) {
    for (PlotWidget* p :
         std::initializer_list<PlotWidget*>{roofline_, capacity_, intensity_, step_})
        p->setDragging(dragging);
}

void MainWindow::renderNow() {
    flushRefresh();
    for (PlotWidget* p :
         std::initializer_list<PlotWidget*>{roofline_, capacity_, intensity_, step_})
        p->replot(QCustomPlot::rpImmediateRefresh);
    strips_->finishAnimation();
    repaint();
}

void MainWindow::refreshNow() {
    if (!hasState_)
        return;
    controls_->setState(state_);
    gpuPanel_->setState(state_);
    // The geometry tree only changes with the model or its weights; the warnings under it
    // follow TP and h_kv and are set alone (rebuilding the tree repainted the dock per step).
    const QString key = q(state_.modelRef) + QString::number(report_.weightBytes);
    if (key != modelPanelKey_) {
        modelPanelKey_ = key;
        modelPanel_->setState(state_, report_);
        ribbon_->setLayers(layerKindsFromModel(state_.model), layerWindowsFromModel(state_.model),
                           state_.model.mtpLayers.value);
    } else {
        modelPanel_->setWarnings(state_, report_);
    }
    numbers_->setReport(report_, previous_, &state_.model, &state_.gpu);
    strips_->setReport(report_, modelTitle(state_));
    roofline_->setData(computeRoofline(state_, report_));
    const TpData tp = computeTpSeries(state_, report_, mlaReference_ ? &*mlaReference_ : nullptr,
                                      gqaReference_ ? &*gqaReference_ : nullptr);
    capacity_->setData(tp);
    intensity_->setData(tp);
    step_->setState(state_, report_);
    setWindowTitle(tr("kvscope — %1 · %2 · TP %3")
                       .arg(modelTitle(state_), q(variantWithGroup(report_)))
                       .arg(report_.tp));
}

void MainWindow::stepModelPreset(int delta) {
    const auto& presets = modelPresets();
    if (presets.empty())
        return;
    int i = 0;
    for (int k = 0; k < static_cast<int>(presets.size()); ++k)
        if (presets[static_cast<std::size_t>(k)].id == state_.modelRef)
            i = k;
    const int n = static_cast<int>(presets.size());
    i = ((i + delta) % n + n) % n;
    loadModelRef(q(presets[static_cast<std::size_t>(i)].id));
}

void MainWindow::stepGpuPreset(int delta) {
    const auto& presets = gpuPresets();
    if (presets.empty())
        return;
    int i = 0;
    for (int k = 0; k < static_cast<int>(presets.size()); ++k)
        if (presets[static_cast<std::size_t>(k)].id == state_.gpu.id)
            i = k;
    const int n = static_cast<int>(presets.size());
    i = ((i + delta) % n + n) % n;
    loadGpuRef(q(presets[static_cast<std::size_t>(i)].id));
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

void MainWindow::addRecent(const QString& path) {
    recent_.removeAll(path);
    recent_.prepend(path);
    while (recent_.size() > kMaxRecent)
        recent_.removeLast();
    rebuildRecentMenu();
    if (options_.persist)
        QSettings().setValue(QStringLiteral("recentFiles"), recent_);
}

void MainWindow::rebuildRecentMenu() {
    recentMenu_->clear();
    for (const QString& path : recent_)
        recentMenu_->addAction(QFileInfo(path).fileName() + QStringLiteral("  —  ") + path, this,
                               [this, path] { loadModelRef(path); });
    if (recent_.isEmpty())
        recentMenu_->addAction(tr("(none yet)"))->setEnabled(false);
    else {
        recentMenu_->addSeparator();
        recentMenu_->addAction(tr("Clear"), this, [this] {
            recent_.clear();
            rebuildRecentMenu();
            if (options_.persist)
                QSettings().setValue(QStringLiteral("recentFiles"), recent_);
        });
    }
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

void MainWindow::setTheme(bool dark) {
    applyTheme(dark ? ThemeMode::Dark : ThemeMode::Light);
    if (options_.persist)
        QSettings().setValue(QStringLiteral("theme"), toString(currentTheme()));
    if (bannerVisible())
        showBanner(bannerLabel_->text().mid(3), true);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
    if (e->mimeData()->hasUrls() && !e->mimeData()->urls().isEmpty() &&
        e->mimeData()->urls().first().isLocalFile())
        e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
    const auto urls = e->mimeData()->urls();
    if (urls.isEmpty() || !urls.first().isLocalFile())
        return;
    e->acceptProposedAction();
    loadModelRef(urls.first().toLocalFile());
}

void MainWindow::closeEvent(QCloseEvent* e) {
    if (options_.persist)
        saveSettings();
    QMainWindow::closeEvent(e);
}

namespace {
/// The state as earlier builds saved it: one QSettings key per knob under "state/".
Session legacySettingsSession(QSettings& st) {
    Session out;
    st.beginGroup(QStringLiteral("state"));
    out.model = s8(st.value(QStringLiteral("model")).toString());
    out.gpu = s8(st.value(QStringLiteral("gpu")).toString());
    if (out.gpu == "custom") {
        GpuSpec g;
        g.id = "custom";
        g.name = s8(st.value(QStringLiteral("gpuName")).toString());
        g.memoryBytes = st.value(QStringLiteral("gpuMemoryBytes")).toLongLong();
        g.bandwidthBytesPerS = st.value(QStringLiteral("gpuBandwidth")).toDouble();
        g.peakBf16FlopPerS = st.value(QStringLiteral("gpuBf16")).toDouble();
        g.peakFp32FlopPerS = st.value(QStringLiteral("gpuFp32")).toDouble();
        g.gpusPerNode = st.value(QStringLiteral("gpuPerNode")).toLongLong();
        out.customGpu = g;
    }
    Deployment& d = out.deployment;
    d.tp = st.value(QStringLiteral("tp"), 1).toLongLong();
    d.dcp = st.value(QStringLiteral("dcp"), 1).toLongLong();
    if (const qlonglong kv = st.value(QStringLiteral("kvHeads"), 0).toLongLong(); kv > 0)
        d.kvHeads = kv;
    d.context = st.value(QStringLiteral("context"), 8192).toLongLong();
    d.batch = st.value(QStringLiteral("batch"), 1).toLongLong();
    if (auto k = parseKvDtype(s8(st.value(QStringLiteral("kvDtype")).toString())); k.ok())
        d.kvDtype = *k;
    d.gpuMemUtil = st.value(QStringLiteral("util"), 0.9).toDouble();
    if (auto p = parsePoolModel(s8(st.value(QStringLiteral("poolModel")).toString())); p.ok())
        d.poolModel = *p;
    st.endGroup();
    return out;
}
} // namespace

void MainWindow::saveSettings() const {
    QSettings st;
    st.setValue(QStringLiteral("window/geometry"), saveGeometry());
    st.setValue(QStringLiteral("window/state"), saveState(1));
    st.setValue(QStringLiteral("theme"), toString(currentTheme()));
    // The whole state as one session JSON value (core/features/session.h): every schema field comes
    // back on restart, and a field added to the schema needs nothing here.
    st.setValue(QStringLiteral("session"), q(sessionToJson(sessionFromState(state_))));
    st.remove(QStringLiteral("state")); // the per-key layout of earlier builds
}

void MainWindow::loadSettings() {
    QSettings st;
    if (!restoreGeometry(st.value(QStringLiteral("window/geometry")).toByteArray()))
        resize(1600, 1000);
    restoreState(st.value(QStringLiteral("window/state")).toByteArray(), 1);
    // The last state, re-validated: anything the current build refuses is dropped quietly.
    AppState s = state_;
    Session saved;
    if (st.contains(QStringLiteral("session"))) {
        auto parsed = parseSession(s8(st.value(QStringLiteral("session")).toString()));
        if (!parsed.ok())
            return;
        saved = std::move(parsed).value();
    } else if (st.contains(QStringLiteral("state/model"))) {
        saved = legacySettingsSession(st);
    } else {
        return;
    }
    if (auto m = loadModel(saved.model); m.ok()) {
        s.modelRef = saved.model;
        s.model = std::move(m).value();
    }
    if (saved.customGpu) {
        if (validateGpu(*saved.customGpu).ok())
            s.gpu = *saved.customGpu;
    } else if (auto g = loadGpu(saved.gpu); g.ok()) {
        s.gpu = std::move(g).value();
    }
    s.deployment = fitDeployment(s.model, s.gpu, saved.deployment);
    applyState(s);
}

} // namespace kvscope::ui
