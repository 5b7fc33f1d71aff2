// One mark per layer, coloured by what the layer's attention keeps: full, sliding window,
// chunked, MLA, compressed, cross, linear, Mamba, none; the multi-token-prediction layers apart
// at the end. Fed a plain per-layer list that layerKindsFromModel fills from core's layer groups
// (ModelSpec::layerGroups, core/model/layers.h).
#pragma once

#include "core/model/layers.h"
#include "core/model/model.h"

#include <QWidget>
#include <vector>

namespace kvscope::ui {

/// Core's kinds (core/model/layers.h), one per decoder layer.
using LayerKind = kvscope::LayerKind;

/// "full", "sliding", ... (the legend's words).
QString layerKindName(LayerKind k);
/// Every decoder layer's kind from the model's layer groups (a layer no group names is none).
std::vector<LayerKind> layerKindsFromModel(const kvscope::ModelSpec& m);
/// Every decoder layer's window from the layer groups: the sliding window, the chunk, or the
/// compress ratio; 0 where the layer has none.
std::vector<std::int64_t> layerWindowsFromModel(const kvscope::ModelSpec& m);

class LayerRibbon : public QWidget {
    Q_OBJECT
public:
    explicit LayerRibbon(QWidget* parent = nullptr);

    /// `windows[i]`: layer i's window, chunk or compress ratio (0 = none); `mtp`:
    /// multi-token-prediction layers.
    void setLayers(std::vector<LayerKind> kinds, std::vector<std::int64_t> windows,
                   std::int64_t mtp);
    const std::vector<LayerKind>& kinds() const { return kinds_; }
    std::int64_t mtpLayers() const { return mtp_; }
    /// The tooltip at `pos` ("layer 5: sliding window 4,096"), empty off the marks.
    QString toolTipAt(const QPointF& pos) const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent*) override;
    void mouseMoveEvent(QMouseEvent* e) override;

private:
    QRectF markRect(int i) const; ///< layer i; i >= kinds_.size() for the MTP layers

    std::vector<LayerKind> kinds_;
    std::vector<std::int64_t> windows_;
    std::int64_t mtp_ = 0;
};

} // namespace kvscope::ui
