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

enum class Control { KvHeads, Tp, Dcp, Context, Batch, KvDtype, Util, PoolModel };

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

    AppState state_;
    std::vector<std::optional<std::int64_t>> kv_;
    std::vector<std::int64_t> tp_, dcp_;
    std::vector<kvscope::KvDtype> dtypes_;
    QSlider* kvSlider_;
    QSlider* tpSlider_;
    QSlider* dcpSlider_;
    QSlider* contextSlider_;
    QSlider* batchSlider_;
    QSlider* utilSlider_;
    QComboBox* dtypeCombo_;
    QComboBox* poolCombo_;
    QLabel* kvValue_;
    QLabel* tpValue_;
    QLabel* dcpValue_;
    QLabel* contextValue_;
    QLabel* batchValue_;
    QLabel* utilValue_;
};

} // namespace kvscope::ui
