// The centrepiece: query heads drawn as fans feeding their KV head's strip, strips grouped and
// coloured by TP rank, a strip's length proportional to the bytes it holds at the current
// context. KV heads replicated past TP = h_kv are hatched copies on every rank; MLA shows one
// latent strip (r + d_rope wide) per rank. Changes animate; hovering shows exact bytes.
#pragma once

#include "core/law.h"

#include <QVariantAnimation>
#include <QWidget>
#include <cstdint>
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

protected:
    void paintEvent(QPaintEvent*) override;
    void resizeEvent(QResizeEvent*) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void leaveEvent(QEvent*) override;
    void changeEvent(QEvent* e) override;

private:
    struct Item {
        enum Kind { Query, Strip } kind = Strip;
        std::uint64_t key = 0;
        std::uint64_t target = 0; ///< a query head's strip
        QRectF rect;              ///< query: the dot's bounds; strip: the body below its cap
        QColor color;
        double alpha = 1.0;
        bool copy = false;
        int rank = 0;
        QString label; ///< on the strip's cap
        QString tip;
    };
    struct Frame {
        std::vector<Item> items;
        double scaleBytes = 1;
        QRectF stripArea; ///< where strips grow (ruler range)
    };

    Frame layout(const QSize& size, double scaleBytes) const;
    std::vector<Item> interpolated() const;
    void relayout(bool animate);
    void paintFrame(QPainter& p, const QSize& size, const Frame& frame,
                    const std::vector<Item>& items) const;
    const Item* itemAt(const QPointF& pos) const;

    kvscope::Report report_;
    QString title_;
    bool hasReport_ = false;
    bool animated_ = true;
    double scaleBytes_ = 0; ///< ruler full scale, with hysteresis so strips visibly grow
    Frame to_;
    std::vector<Item> from_;
    double t_ = 1.0;
    QVariantAnimation anim_;
    std::uint64_t hovered_ = ~0ull;
};

} // namespace kvscope::ui
