#include "ui/mainwindow.h"

#include "core/engines/engine.h"
#include "core/format.h"
#include "core/model/presets.h"
#include "ui/kvstripsview.h"
#include "ui/layerribbon.h"
#include "ui/numberspanel.h"
#include "ui/qstrings.h"
#include "ui/rooflineplot.h"
#include "ui/sidepanels.h"
#include "ui/stepplot.h"
#include "ui/theme.h"
#include "ui/tpplots.h"
#include "ui/viewmodel.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMimeData>
#include <QScrollArea>
#include <QSettings>
#include <QSlider>
#include <QToolButton>
#include <QVBoxLayout>

namespace kvscope::ui {

namespace {
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

    if (auto ref = loadModel(kMlaReferenceModelId); ref.ok())
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
        // The default engine's own utilisation, as `kvscope-cli size` starts from it.
        d.gpuMemUtil = defaultGpuMemUtil(d.engine);
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

void MainWindow::buildCentral() {
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
}

QDockWidget* MainWindow::addDock(const QString& title, const QString& name, QWidget* w,
                                 Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(w);
    d->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable |
                   QDockWidget::DockWidgetClosable);
    addDockWidget(area, d);
    return d;
}

QWidget* MainWindow::buildRooflineView() {
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
    return wrapPlot(roofline_, rh);
}

QWidget* MainWindow::buildCapacityView() {
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
    return wrapPlot(capacity_, ch);
}

QWidget* MainWindow::buildStepView() {
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
    return wrapPlot(step_, sh);
}

void MainWindow::buildViews() {
    buildCentral();
    setCorner(Qt::TopLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::TopRightCorner, Qt::RightDockWidgetArea);
    setCorner(Qt::BottomRightCorner, Qt::BottomDockWidgetArea);

    controls_ = new ControlsPanel;
    auto* controlsDock =
        addDock(tr("Controls"), QStringLiteral("controlsDock"), controls_, Qt::LeftDockWidgetArea);
    modelPanel_ = new ModelPanel;
    auto* modelDock =
        addDock(tr("Model"), QStringLiteral("modelDock"), modelPanel_, Qt::LeftDockWidgetArea);
    gpuPanel_ = new GpuPanel;
    auto* gpuDock =
        addDock(tr("GPU"), QStringLiteral("gpuDock"), gpuPanel_, Qt::LeftDockWidgetArea);

    numbers_ = new NumbersPanel;
    numbers_->setObjectName(QStringLiteral("numbersPanel"));
    auto* scroll = new QScrollArea;
    scroll->setWidget(numbers_);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* numbersDock =
        addDock(tr("Numbers"), QStringLiteral("numbersDock"), scroll, Qt::RightDockWidgetArea);

    auto* rooflineDock = addDock(tr("Roofline"), QStringLiteral("rooflineDock"),
                                 buildRooflineView(), Qt::BottomDockWidgetArea);
    auto* capacityDock = addDock(tr("Capacity vs TP"), QStringLiteral("capacityDock"),
                                 buildCapacityView(), Qt::BottomDockWidgetArea);
    intensity_ = new TpPlot(TpPlot::Kind::Intensity);
    intensity_->setObjectName(QStringLiteral("intensityPlot"));
    auto* intensityDock = addDock(tr("Intensity vs TP"), QStringLiteral("intensityDock"),
                                  wrapPlot(intensity_, nullptr), Qt::BottomDockWidgetArea);
    auto* stepDock = addDock(tr("Decode step"), QStringLiteral("stepDock"), buildStepView(),
                             Qt::BottomDockWidgetArea);
    splitDockWidget(rooflineDock, capacityDock, Qt::Horizontal);
    splitDockWidget(capacityDock, intensityDock, Qt::Horizontal);
    splitDockWidget(controlsDock, modelDock, Qt::Vertical);
    tabifyDockWidget(modelDock, gpuDock);
    modelDock->raise();
    tabifyDockWidget(intensityDock, stepDock);
    connect(stepDock, &QDockWidget::visibilityChanged, step_, &StepPlot::setOnScreen);
    intensityDock->raise();

    resizeDocks({controlsDock, numbersDock}, {370, 380}, Qt::Horizontal);
    resizeDocks({rooflineDock}, {400}, Qt::Vertical);
    resizeDocks({controlsDock, modelDock}, {270, 700}, Qt::Vertical);
    resizeDocks({rooflineDock, capacityDock, intensityDock}, {520, 360, 360}, Qt::Horizontal);
    connectViews();
}

void MainWindow::connectViews() {
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
    if (name == QLatin1String("step")) {
        step_->flushPending(); // drawn or exported now: the state it skipped behind its tab
        return step_;
    }
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
    step_->flushPending();
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

} // namespace kvscope::ui
