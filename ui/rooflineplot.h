// The roofline (log-log): bandwidth slope, bf16 tensor and fp32 roofs, the ridge, one point per
// variant of the current model, the current configuration highlighted with its % of peak, and
// an optional layer of measured points.
#pragma once

#include "ui/measurements.h"
#include "ui/plotwidget.h"
#include "ui/viewmodel.h"

#include <QPointer>

namespace kvscope::ui {

class RooflinePlot : public PlotWidget {
    Q_OBJECT
public:
    explicit RooflinePlot(QWidget* parent = nullptr);

    void setData(const RooflineData& data);
    void setMeasuredPoints(const QVector<MeasuredPoint>& points);
    void setMeasuredCeilings(const MeasuredCeilings& ceilings);
    void setMeasuredVisible(bool visible);
    bool measuredVisible() const { return measuredVisible_; }
    const QVector<MeasuredPoint>& measuredPoints() const { return measured_; }
    /// The current-configuration callout's box in widget pixels (empty when there is none).
    QRectF calloutRect() const;

Q_SIGNALS:
    void measuredVisibleChanged(bool visible);

protected:
    void rebuild() override;
    void mouseMoveEvent(QMouseEvent* e) override;

private:
    /// Shrinks the current-configuration callout to the axis rect and moves it to the corner
    /// that covers the fewest points and labels (run after each layout).
    void fitCallout();

    RooflineData data_;
    QPointer<QCPItemText> callout_;
    QPointer<QCPItemLine> calloutArrow_;
    QStringList calloutTexts_; ///< the callout's text, preferred form first
    QFont calloutFont_;
    QVector<MeasuredPoint> measured_;
    MeasuredCeilings ceilings_;
    bool measuredVisible_ = true;
    bool hasData_ = false;
};

} // namespace kvscope::ui
