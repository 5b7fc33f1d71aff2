// The centrepiece: query heads drawn as fans feeding their KV head's strip, strips grouped and
// coloured by TP rank, a strip's length proportional to the bytes it holds at the current
// context. KV heads replicated past TP = h_kv are hatched copies on every rank; MLA shows one
// latent strip (r + d_rope wide) per rank. Changes animate; hovering shows exact bytes.
#pragma once

#include "core/law/law.h"

#include <QHash>
#include <QPixmap>
#include <QVariantAnimation>
#include <QWidget>
#include <array>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kvscope::ui {

class KvStripsView : public QWidget {
    Q_OBJECT
public:
    explicit KvStripsView(QWidget* parent = nullptr);

    void setReport(const kvscope::Report& report, const QString& modelTitle);
    /// Off for screenshots and benchmarks: views jump to their final state.
    void setAnimated(bool on) { animated_ = on; }
    void finishAnimation();
    /// Paints the view at `size` on any painter (widget, image, SVG, PDF).
    void paintTo(QPainter& p, const QSize& size);

    QSize sizeHint() const override { return {900, 560}; }
    QSize minimumSizeHint() const override { return {420, 300}; }

    /// Ranks drawn one by one before identical ones collapse into a brace (about 16 at 1080p).
    int legibleRanks(double width) const;
    /// The brace's count line ("× 120 identical ranks"), empty when every rank is drawn.
    QString collapsedText() const;
    /// The tooltip the view shows at `pos` (widget pixels), empty where there is nothing.
    QString toolTipAt(const QPointF& pos) const;

protected:
    void paintEvent(QPaintEvent*) override;
    void resizeEvent(QResizeEvent*) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void leaveEvent(QEvent*) override;
    void changeEvent(QEvent* e) override;

private:
    struct Item {
        enum Kind { Query, Strip, Bundle } kind = Strip;
        std::uint64_t key = 0;
        std::uint64_t target = 0; ///< a query head's (or bundle's) strip
        QRectF rect;              ///< query: the dot's bounds; strip: the body below its cap
        QColor color;
        double alpha = 1.0;
        bool copy = false;
        int rank = 0;
        std::int64_t head = 0; ///< strip: its KV head (or copy); query: its index
        std::int64_t copyNo = 0;
        std::int64_t count = 1; ///< bundle: the query heads it stands for
        QString label;          ///< on the strip's cap; a bundle's count
    };
    /// A rank's column, or the brace that stands for the identical ranks past the ones drawn.
    struct Column {
        double x = 0, w = 0;
        int rank = 0;     ///< the rank drawn, or the brace's first rank
        int lastRank = 0; ///< the brace's last rank (== rank for a drawn rank)
        bool brace = false;
        bool identical = false; ///< every collapsed rank holds the same data as the drawn ones
        QString text, subText;  ///< the brace's "× 120 identical ranks", "each holds ..."
    };
    struct Frame {
        std::vector<Item> items;
        std::vector<Column> columns;
        double scaleBytes = 1;
        double stripLen = 0;      ///< every strip's length (one per-rank cell size)
        double captionBottom = 0; ///< where the title and caption lines end
        QRectF stripArea;         ///< where strips grow (ruler range)
    };

    /// One layout's shared measures (kvstripslayout.cpp).
    struct Geometry {
        int ranks = 0, drawn = 0;
        bool collapsed = false, mla = false;
        double areaW = 0, colW = 0, gap = 0, qY = 0, stripTop = 0, stripW = 0, slotW = 0, len = 0;
        std::int64_t kvpr = 1, qpr = 1, copies = 1;
        std::int64_t headOf(const kvscope::Report& r, std::int64_t rank, std::int64_t s) const {
            return r.kvReplicated ? rank / copies : rank * kvpr + s;
        }
    };
    Frame layout(const QSize& size, double scaleBytes) const;
    void layoutRank(Frame& f, const Geometry& g, int rank) const;
    void layoutQueries(Frame& f, const Geometry& g, int rank,
                       const std::vector<std::uint64_t>& rankStrips) const;
    Column braceColumn(const Geometry& g) const;
    /// What the view draws of a report: a report that changes none of it (a util or pool
    /// step) leaves the view as it is, unpainted.
    static QString drawnKey(const kvscope::Report& r, const QString& title);
    std::vector<Item> interpolated() const;
    void relayout(bool animate);
    // Painting (kvstripspaint.cpp), back to front.
    void paintFrame(QPainter& p, const QSize& size, const Frame& frame,
                    const std::vector<Item>& items) const;
    void paintCaption(QPainter& p, const QSize& size) const;
    void paintGroupKey(QPainter& p, const QSize& size) const;
    void paintRuler(QPainter& p, const Frame& frame) const;
    void paintColumns(QPainter& p, const Frame& frame) const;
    void paintBrace(QPainter& p, const Frame& frame, const Column& col) const;
    /// Each query dot or bundle with the strip it reads (those whose strip is laid out).
    using Fan = std::pair<const Item*, const Item*>;
    static std::vector<Fan> fansOf(const std::vector<Item>& items);
    void paintFans(QPainter& p, const std::vector<Fan>& fans) const;
    void paintStrips(QPainter& p, const std::vector<Item>& items) const;
    void paintQueries(QPainter& p, const std::vector<Item>& items) const;
    void paintFansCached(QPainter& p, const QSize& size, const std::vector<Item>& items) const;
    const QPixmap& dotSprite(const QRectF& r, const QColor& fill, const QPen& pen,
                             const QPainter& p) const;
    QString tipFor(const Item& it) const;
    QString braceTip(const Column& c) const;
    const Item* itemAt(const QPointF& pos) const;

    kvscope::Report report_;
    QString title_;
    QString drawn_; ///< drawnKey of the report laid out
    bool hasReport_ = false;
    bool animated_ = true;
    double scaleBytes_ = 0; ///< ruler full scale, with hysteresis so strips visibly grow
    Frame to_;
    std::vector<Item> from_;
    double t_ = 1.0;
    QVariantAnimation anim_;
    std::uint64_t hovered_ = ~0ull;
    /// Query dots stamped from pixmaps, one per look (size, colours, pen, pixel ratio): a
    /// stroked antialiased ellipse per query head was a third of a repaint.
    /// A dot's look: size, fill, pen colour and width, device pixel ratio, quarter-pixel phase
    /// (numbers, not a formatted string: formatting cost more than stamping the dot).
    using DotKey = std::array<double, 8>;
    struct DotKeyHash {
        size_t operator()(const DotKey& k) const noexcept { return qHashRange(k.begin(), k.end()); }
    };
    mutable std::unordered_map<DotKey, QPixmap, DotKeyHash> dotSprites_;
    /// The fans layer and the geometry it was drawn for (see paintFansCached).
    struct FansSprite {
        std::vector<double> key;
        QPoint at;
        QPixmap pixmap;
    };
    mutable std::vector<FansSprite> fans_; ///< most recent first
    mutable QString captionTip_; ///< the full caption when the last paint elided part of it
};

} // namespace kvscope::ui
