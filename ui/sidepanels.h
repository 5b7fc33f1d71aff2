// The model and GPU panels: preset pickers, config.json opening, the resolved geometry with
// the provenance of every number, warnings, and an editable custom GPU.
#pragma once

#include "core/law/law.h"
#include "ui/appstate.h"

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QToolButton;
class QTreeWidget;

namespace kvscope::ui {

class ModelPanel : public QWidget {
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);
    void setState(const AppState& s, const kvscope::Report& r);
    /// The warnings under the tree only (they follow TP and h_kv; the tree does not).
    void setWarnings(const AppState& s, const kvscope::Report& r);
    /// The "Recent" button's menu (owned by the main window).
    void setRecentMenu(QMenu* menu);
    QComboBox* presetCombo() const { return presets_; }

Q_SIGNALS:
    void modelRequested(const QString& idOrPath);
    void openRequested();

private:
    /// Each row as tall as its provenance wrapped at the "From" column's width.
    void fitProvenance();

    QComboBox* presets_;
    QPushButton* open_;
    QToolButton* recent_;
    QTreeWidget* geometry_;
    QLabel* warnings_;
    QScrollArea* warningsArea_ = nullptr;
    QString currentRef_;
};

class GpuPanel : public QWidget {
    Q_OBJECT
public:
    explicit GpuPanel(QWidget* parent = nullptr);
    void setState(const AppState& s);
    QComboBox* presetCombo() const { return presets_; }

Q_SIGNALS:
    void gpuPresetRequested(const QString& id);
    void customGpuEdited(const kvscope::GpuSpec& gpu);

private:
    void emitCustom();

    QComboBox* presets_;
    QDoubleSpinBox* memory_;
    QDoubleSpinBox* bandwidth_;
    QDoubleSpinBox* bf16_;
    QDoubleSpinBox* fp32_;
    QSpinBox* perNode_;
    QLabel* summary_;
    kvscope::GpuSpec gpu_;
};

} // namespace kvscope::ui
