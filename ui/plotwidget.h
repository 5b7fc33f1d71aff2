// Common ground of kvscope's QCustomPlot views: projector-sized fonts, palette-aware colours
// (refreshed on light/dark changes), a legend below the axis rect so it never hides data, and
// queued replots so a slider drag never builds a backlog.
#pragma once

#include "ui/qcp.h"

#include <QString>

namespace kvscope::ui {

class PlotWidget : public QCustomPlot {
    Q_OBJECT
public:
    explicit PlotWidget(QWidget* parent = nullptr);

    /// Replots once the event loop is idle; many calls in a burst fold into one.
    void requestReplot() { replot(QCustomPlot::rpQueuedReplot); }
    /// Vector (PDF, SVG) or raster export chosen by the file's suffix; false on failure.
    bool exportTo(const QString& path, int width = 0, int height = 0);
    /// While a slider is held: no antialiasing, so replots keep up with the drag; on release
    /// the plot replots once more at full quality.
    void setDragging(bool dragging);

protected:
    void changeEvent(QEvent* e) override;
    /// Rebuilds the plot's items and graphs in the current palette's colours.
    virtual void rebuild() = 0;
    void styleAxes();
    bool dark() const;
    QColor textColor() const;
    QColor mutedColor() const;
    QColor gridColor() const;
    QFont labelFont(double factor = 1.0, bool bold = false) const;
    /// A text item in plot coordinates with the palette's text colour.
    QCPItemText* addLabel(double x, double y, const QString& text, Qt::Alignment align,
                          const QColor& color, double fontFactor = 1.0, bool bold = false);

    QCPLegend* bottomLegend_ = nullptr;
};

} // namespace kvscope::ui
