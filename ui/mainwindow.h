// The kvscope window: one state (model, GPU, deployment), every view following it while a
// slider moves. The public API below is the seam later features (story mode, compare, plan,
// sessions, measurements) build on without touching the views.
#pragma once

#include "core/law/law.h"
#include "ui/appstate.h"
#include "ui/controlspanel.h"

#include <QMainWindow>
#include <QTimer>
#include <optional>

class QLabel;
class QMenu;
class QDockWidget;

namespace kvscope::ui {

class KvStripsView;
class LayerRibbon;
class NumbersPanel;
class RooflinePlot;
class TpPlot;
class StepPlot;
class ModelPanel;
class GpuPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    struct Options {
        bool persist = true; ///< read and write QSettings (off for tests, screenshots, bench)
        bool animate = true; ///< animate the strips (off for screenshots and the benchmark)
    };
    explicit MainWindow(QWidget* parent = nullptr);
    explicit MainWindow(Options options, QWidget* parent = nullptr);
    ~MainWindow() override;

    const AppState& state() const { return state_; }
    const kvscope::Report& report() const { return report_; }
    /// Validates through core (evaluate); on error keeps the old state, fills `error` and
    /// returns false. Views refresh once the event loop is idle (bursts fold into one).
    bool applyState(const AppState& s, QString* error = nullptr);
    /// A preset id or a config.json path (or folder). On error a banner names the field and
    /// the rule, and the previous model stays loaded.
    bool loadModelRef(const QString& idOrPath, QString* error = nullptr);
    bool loadGpuRef(const QString& idOrPath, QString* error = nullptr);
    /// "File", "View", "Tools", "Help".
    QMenu* menu(const QString& name) const;
    void showBanner(const QString& message, bool error);
    void hideBanner();
    bool bannerVisible() const;
    QString bannerText() const;
    /// "strips", "numbers", "roofline", "capacity", "intensity".
    QWidget* viewWidget(const QString& name) const;
    RooflinePlot* rooflinePlot() const { return roofline_; }
    StepPlot* stepPlot() const { return step_; }
    NumbersPanel* numbersPanel() const { return numbers_; }
    ControlsPanel* controlsPanel() const { return controls_; }
    KvStripsView* stripsView() const { return strips_; }
    LayerRibbon* layerRibbon() const { return ribbon_; }

    /// Runs a pending refresh now (tests, the benchmark, screenshots).
    void flushRefresh();
    /// Plots drop antialiasing while a slider is held (the benchmark drags this way too).
    void setDragging(bool dragging);
    /// Refresh, replot every plot immediately and repaint the whole window synchronously.
    void renderNow();
    /// Every shortcut of the window, generated from its actions (menus, submenus and the
    /// window's own, features included): {"Ctrl+M", "Compare: pin A"}, in menu order.
    QList<QPair<QString, QString>> shortcutList() const;
    /// Exports the window or one view by the file's suffix (.png, .svg, .pdf).
    bool exportWindow(const QString& path);
    bool exportView(const QString& name, const QString& path);

Q_SIGNALS:
    void stateChanged(const kvscope::ui::AppState& state);

protected:
    void closeEvent(QCloseEvent* e) override;
    void dragEnterEvent(QDragEnterEvent* e) override;
    void dropEvent(QDropEvent* e) override;

private:
    void buildViews();
    void buildCentral();
    QDockWidget* addDock(const QString& title, const QString& name, QWidget* w,
                         Qt::DockWidgetArea area);
    QWidget* buildRooflineView();
    QWidget* buildCapacityView();
    QWidget* buildStepView();
    void connectViews();
    void buildMenus();
    void buildShortcuts();
    void refreshNow();
    void requestDeployment(const kvscope::Deployment& d);
    void setGpu(const kvscope::GpuSpec& gpu);
    void stepModelPreset(int delta);
    void stepGpuPreset(int delta);
    void openConfigDialog();
    void exportDialog(const QString& view);
    void addRecent(const QString& path);
    void rebuildRecentMenu();
    void showShortcuts();
    void setTheme(bool dark);
    void loadSettings();
    void saveSettings() const;
    QWidget* wrapPlot(QWidget* plot, QWidget* header);

    Options options_;
    AppState state_;
    kvscope::Report report_;
    std::optional<kvscope::Report> previous_;
    bool hasState_ = false;
    QTimer refreshTimer_;
    std::optional<kvscope::ModelSpec> mlaReference_;
    std::optional<kvscope::ModelSpec> gqaReference_;
    QString modelPanelKey_;

    QWidget* banner_ = nullptr;
    QLabel* bannerLabel_ = nullptr;
    KvStripsView* strips_ = nullptr;
    LayerRibbon* ribbon_ = nullptr;
    NumbersPanel* numbers_ = nullptr;
    RooflinePlot* roofline_ = nullptr;
    TpPlot* capacity_ = nullptr;
    TpPlot* intensity_ = nullptr;
    StepPlot* step_ = nullptr;
    ModelPanel* modelPanel_ = nullptr;
    GpuPanel* gpuPanel_ = nullptr;
    ControlsPanel* controls_ = nullptr;
    QMenu* fileMenu_ = nullptr;
    QMenu* viewMenu_ = nullptr;
    QMenu* toolsMenu_ = nullptr;
    QMenu* helpMenu_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    QStringList recent_;
};

} // namespace kvscope::ui
