// Common ground of kvscope's QCustomPlot views: projector-sized fonts, palette-aware colours
// (refreshed on light/dark changes), a legend below the axis rect so it never hides data, and
// queued replots so a slider drag never builds a backlog.
#pragma once

#include "ui/qcp.h"

#include <QPointer>
#include <QString>
#include <initializer_list>
#include <utility>
#include <vector>

namespace kvscope::ui {

/// A graph that stamps its point markers from a pixmap rendered once per marker style: each
/// antialiased ring stroked by QPainter cost as much as laying out a label, and a slider step
/// redraws every marker. Exports (PDF, SVG, PNG) draw the vector shapes as QCPGraph does, and
/// scatterStyle() stays the shape (presentation mode enlarges it; the sprite follows).
class MarkerGraph : public QCPGraph {
public:
    using QCPGraph::QCPGraph;

protected:
    void drawScatterPlot(QCPPainter* painter, const QVector<QPointF>& scatters,
                         const QCPScatterStyle& style) const override;
    void drawLinePlot(QCPPainter* painter, const QVector<QPointF>& lines) const override;
};

/// A text item drawn from a pixmap of its box and text, rendered once per text, font, colours
/// and sub-pixel phase: laying a label's text out again (harfbuzz shaping) at each replot was a
/// fifth of a slider step. Exports draw the text as QCPItemText does (vectors in PDF and SVG).
class SpriteText : public QCPItemText {
public:
    using QCPItemText::QCPItemText;

protected:
    void draw(QCPPainter* painter) override;
    /// The box's corners and edges as QCPItemText computes them, from the measured-once text
    /// (the callout's arrow asks for its anchor at every draw).
    QPointF anchorPixelPosition(int anchorId) const override;
};

/// A plot title drawn and measured from the same caches as SpriteText.
class SpriteTitle : public QCPTextElement {
public:
    using QCPTextElement::QCPTextElement;

protected:
    void draw(QCPPainter* painter) override;
    QSize minimumOuterSizeHint() const override;
    QSize maximumOuterSizeHint() const override;
};

class PlotWidget : public QCustomPlot {
    Q_OBJECT
public:
    explicit PlotWidget(QWidget* parent = nullptr);

    /// Replots once the event loop is idle; many calls in a burst fold into one.
    void requestReplot() { replot(QCustomPlot::rpQueuedReplot); }
    /// A graph whose markers are drawn from a cached pixmap (hides QCustomPlot::addGraph so the
    /// plots' graphs all get one).
    QCPGraph* addGraph(QCPAxis* keyAxis = nullptr, QCPAxis* valueAxis = nullptr);
    /// Vector (PDF, SVG) or raster export chosen by the file's suffix; false on failure.
    bool exportTo(const QString& path, int width = 0, int height = 0);
    /// While a slider is held: no antialiasing, so replots keep up with the drag; on release
    /// the plot replots once more at full quality.
    void setDragging(bool dragging);

    /// Every text item's box in widget pixels (rotated labels included) and every plotted
    /// point (graphs drawn with a scatter) in widget pixels: what the tests check for overlap.
    QVector<QRectF> labelRects() const;
    QVector<QPointF> pointPixels() const;
    /// Every drawn line in widget pixels: item lines, straight lines (across the axis rect) and
    /// each graph's segments (graphs drawn with a line): what a label must not cross.
    QVector<QLineF> lineSegments() const;
    /// Whether `segment` passes through the inside of `box` (touching its edge does not count).
    static bool crosses(const QLineF& segment, const QRectF& box);

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
    /// A bare text item drawn from a cached pixmap (addLabel's, without its placement).
    QCPItemText* addText() { return new SpriteText(this); }

    /// A label that may sit at any of `spots` (plot coordinates with an alignment, in order of
    /// preference): after each layout it takes the first that stays inside the axis rect and
    /// covers no point and no other label (else the one that covers least).
    struct Spot {
        double x, y;
        Qt::Alignment align;
    };
    /// A floating label with its spots, as the parts of a plot's rebuild return them (a null
    /// label: nothing to place).
    using Floating = std::pair<QCPItemText*, std::vector<Spot>>;
    /// Spots beside a vertical line at x on a log x axis: for each height in order, right of
    /// the line (x·gap, left-aligned) then left of it (x / gap, right-aligned), with the
    /// height's vertical alignment.
    struct Height {
        double y;
        Qt::Alignment vertical;
    };
    static std::vector<Spot> besideLine(double x, double gap,
                                        std::initializer_list<Height> heights);
    void addFloating(QCPItemText* label, std::vector<Spot> spots);
    /// A warning-tinted band from x0 to the x axis' end between y0 and y1 (plot coordinates),
    /// on the grid layer: the region a limit rules out (replicated KV heads, past the pool).
    void addWarningBand(double x0, double y0, double y1);
    void placeFloating();
    static QRectF itemRect(const QCPItemText* t);
    static QSizeF textBoxSize(const QCPItemText* t);

    /// Swaps the legend's items for ones that draw and measure their text from caches (run
    /// before each replot: QCustomPlot adds a plain item for every new plottable).
    void adoptLegendItems();

    QCPLegend* bottomLegend_ = nullptr;
    std::vector<std::pair<QPointer<QCPItemText>, std::vector<Spot>>> floating_;
};

} // namespace kvscope::ui
