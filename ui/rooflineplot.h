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
    /// What the callout must keep clear of, in widget pixels; `tip` is where its arrow points.
    struct CalloutObstacles {
        QVector<QPointF> points;
        QVector<QRectF> labels;
        QPointF tip;
    };
    CalloutObstacles calloutObstacles() const;

    /// The axes' ranges and where the ridge is (rebuild's first step, the others' input).
    struct Frame {
        double x0, x1, y0, y1, ridge;
    };
    /// The slope, the roofs and the ridge; their labels are returned to be placed last.
    void addRoofs(const Frame& f, std::vector<std::pair<QCPItemText*, std::vector<Spot>>>& labels);
    /// One point per variant (coinciding ones share a label) and the current one's callout.
    void addVariants();
    void addCurrent(const VariantPoint& current, const QStringList& sameAsCurrent);
    /// The measured ceiling and points (when shown).
    void addMeasured(const Frame& f);

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
