// One mark per layer, coloured by what the layer's attention keeps: full, sliding window,
// chunked, MLA, cross, linear, Mamba, none; the multi-token-prediction layers apart at the
// end. Fed a plain per-layer list (layerKindsFromModel fills it from what core knows today:
// ModelSpec::layerWindow and the MLA flag).
#pragma once

#include "core/model.h"

#include <QWidget>
#include <vector>

namespace kvscope::ui {

enum class LayerKind { Full, Sliding, Chunked, Mla, Cross, Linear, Mamba, None };

/// "full", "sliding", ... (the legend's words).
QString layerKindName(LayerKind k);
/// Every layer's kind from the model: MLA for an MLA model, else sliding where
/// layerWindow[i] > 0 and full elsewhere.
std::vector<LayerKind> layerKindsFromModel(const kvscope::ModelSpec& m);

class LayerRibbon : public QWidget {
    Q_OBJECT
public:
    explicit LayerRibbon(QWidget* parent = nullptr);

    /// `windows[i]`: layer i's window (0 = none); `mtp`: multi-token-prediction layers.
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
