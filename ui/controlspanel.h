// The sliders. Each snaps to values core says are valid (h_kv: the divisors of h; TP: what the
// engines accept at that h_kv; DCP: what validates) and has a keyboard shortcut.
#pragma once

#include "ui/appstate.h"

#include <QWidget>
#include <cstdint>
#include <optional>
#include <vector>

class QComboBox;
class QLabel;
class QSlider;

namespace kvscope::ui {

/// PoolModel is the pool picker: an engine release kvscope models (core/engines/engine.h,
/// modeledEngineReleases) or the chapter's datasheet pool. Pp: pipeline-parallel stages.
enum class Control { KvHeads, Tp, Dcp, Context, Batch, KvDtype, Util, PoolModel, Pp };

class ControlsPanel : public QWidget {
    Q_OBJECT
public:
    explicit ControlsPanel(QWidget* parent = nullptr);

    void setState(const AppState& s);
    /// Moves a control by `delta` steps (keyboard shortcuts); wraps for the combo boxes.
    void step(Control c, int delta);
    QSlider* slider(Control c) const;

Q_SIGNALS:
    void deploymentRequested(const kvscope::Deployment& d);

private:
    void addRow(Control c, const QString& name, const QString& shortcuts, QWidget* editor);
    void sliderMoved(Control c, int index);
    void fillPoolCombo(const Deployment& d);
    void connectControls();

    AppState state_;
    std::vector<std::optional<std::int64_t>> kv_;
    std::vector<std::int64_t> tp_, dcp_, pp_;
    std::vector<kvscope::KvDtype> dtypes_;
    QSlider* kvSlider_;
    QSlider* tpSlider_;
    QSlider* dcpSlider_;
    QSlider* contextSlider_;
    QSlider* batchSlider_;
    QSlider* utilSlider_;
    QSlider* ppSlider_;
    QComboBox* dtypeCombo_;
    QComboBox* poolCombo_;
    QLabel* kvValue_;
    QLabel* tpValue_;
    QLabel* dcpValue_;
    QLabel* contextValue_;
    QLabel* batchValue_;
    QLabel* utilValue_;
    QLabel* ppValue_;
};

} // namespace kvscope::ui
