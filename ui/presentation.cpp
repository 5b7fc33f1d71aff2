#include "ui/presentation.h"

#include "ui/mainwindow.h"
#include "ui/qcp.h"
#include "ui/theme.h"

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QGridLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QMenu>
#include <QPainter>
#include <QScreen>
#include <QScrollArea>

namespace kvscope::ui {

namespace {
constexpr double kFontScale = 1.35;
constexpr double kLineScale = 2.0;
constexpr double kMarkerScale = 1.4;    ///< point markers' size
constexpr double kMarkerPenScale = 1.5; ///< their outline (at least 1.5 px)

/// Black ground, white text, yellow accents: reads on a washed-out projector.
QPalette highContrast() {
    QPalette p;
    const QColor bg(0, 0, 0), fg(255, 255, 255), base(16, 16, 16), hi(255, 214, 0);
    p.setColor(QPalette::Window, bg);
    p.setColor(QPalette::WindowText, fg);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, QColor(36, 36, 36));
    p.setColor(QPalette::Text, fg);
    p.setColor(QPalette::Button, QColor(30, 30, 30));
    p.setColor(QPalette::ButtonText, fg);
    p.setColor(QPalette::BrightText, hi);
    p.setColor(QPalette::Highlight, hi);
    p.setColor(QPalette::HighlightedText, bg);
    p.setColor(QPalette::ToolTipBase, bg);
    p.setColor(QPalette::ToolTipText, fg);
    p.setColor(QPalette::PlaceholderText, QColor(200, 200, 200));
    p.setColor(QPalette::Link, hi);
    p.setColor(QPalette::Mid, QColor(140, 140, 140));
    p.setColor(QPalette::Dark, QColor(90, 90, 90));
    p.setColor(QPalette::Light, QColor(220, 220, 220));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(150, 150, 150));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(150, 150, 150));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(150, 150, 150));
    return p;
}

/// Dims the window and lists the shortcuts in large type; any key or click closes it.
class HelpOverlay : public QWidget {
public:
    HelpOverlay(QWidget* parent, const QStringList& lines) : QWidget(parent) {
        setObjectName(QStringLiteral("helpOverlay"));
        setAttribute(Qt::WA_StyledBackground, false);
        setFocusPolicy(Qt::StrongFocus);
        auto* outer = new QGridLayout(this);
        auto* title = new QLabel(tr("Keyboard shortcuts  (any key closes)"), this);
        title->setFont(scaledFont(font(), 1.6, true));
        title->setStyleSheet(QStringLiteral("color: #ffd600"));
        outer->addWidget(title, 0, 0, 1, 4);
        const int perColumn = (static_cast<int>(lines.size()) + 1) / 2;
        for (int i = 0; i < lines.size(); ++i) {
            const QStringList parts = lines[i].split(QLatin1Char('\t'));
            auto* k = new QLabel(parts.value(0), this);
            auto* d = new QLabel(parts.value(1), this);
            k->setFont(scaledFont(font(), 1.15, true));
            d->setFont(scaledFont(font(), 1.15));
            k->setStyleSheet(QStringLiteral("color: #ffd600"));
            d->setStyleSheet(QStringLiteral("color: white"));
            const int col = (i / std::max(1, perColumn)) * 2;
            const int row = 1 + i % std::max(1, perColumn);
            outer->addWidget(k, row, col, Qt::AlignRight);
            outer->addWidget(d, row, col + 1);
        }
        outer->setContentsMargins(60, 40, 60, 40);
        outer->setHorizontalSpacing(18);
        outer->setRowStretch(outer->rowCount(), 1);
        setGeometry(parent->rect());
        parent->installEventFilter(this);
    }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), QColor(0, 0, 0, 225));
    }
    bool eventFilter(QObject* o, QEvent* e) override {
        if (o == parentWidget() && e->type() == QEvent::Resize)
            setGeometry(parentWidget()->rect());
        return false;
    }
    void keyPressEvent(QKeyEvent*) override { hide(); }
    void mousePressEvent(QMouseEvent*) override { hide(); }
};
} // namespace

PresentationController::PresentationController(MainWindow& w) : QObject(&w), w_(w) {
    setObjectName(QStringLiteral("kvscopePresentation"));
}

void PresentationController::setActive(bool on, bool fullScreen) {
    if (on == active_)
        return;
    active_ = on;
    if (on) {
        oldFont_ = w_.font();
        oldPalette_ = w_.palette();
        wasFullScreen_ = w_.isFullScreen();
        QFont f = oldFont_;
        f.setPointSizeF(f.pointSizeF() * kFontScale);
        w_.setFont(f);
        w_.setPalette(highContrast());
        // The room sees the views, not the controls: every control has a key (F1 lists them),
        // so the side docks give their width to the strips and the plots at 1080p.
        oldLayout_ = w_.saveState();
        for (const char* name : {"controlsDock", "modelDock", "gpuDock"})
            if (auto* d = w_.findChild<QDockWidget*>(QLatin1String(name)))
                d->hide();
        // The plots get half the height (they read from the back of a hall at 1080p: about
        // 500 px tall instead of 400), the strips and the numbers the other half (a hair more:
        // the numbers of a hybrid model's layer groups fit it without scrolling).
        QList<QDockWidget*> bottom;
        for (QDockWidget* d : w_.findChildren<QDockWidget*>())
            if (w_.dockWidgetArea(d) == Qt::BottomDockWidgetArea && !d->isHidden())
                bottom << d;
        const QSize room = fullScreen && w_.screen() ? w_.screen()->size() : w_.size();
        if (!bottom.isEmpty())
            w_.resizeDocks({bottom.front()}, {room.height() * 49 / 100}, Qt::Vertical);
        // The numbers in presentation type: 30% of the width holds their lines with
        // little wrapping, so the panel fits its half of the height without scrolling.
        if (auto* numbers = w_.findChild<QDockWidget*>(QStringLiteral("numbersDock")))
            w_.resizeDocks({numbers}, {room.width() * 30 / 100}, Qt::Horizontal);
        for (auto* plot : w_.findChildren<QCustomPlot*>()) {
            connect(plot, &QCustomPlot::beforeReplot, this, &PresentationController::thicken,
                    Qt::UniqueConnection);
            plot->replot(QCustomPlot::rpQueuedReplot);
        }
        if (fullScreen)
            w_.showFullScreen();
    } else {
        w_.setFont(oldFont_);
        w_.setPalette(oldPalette_);
        w_.restoreState(oldLayout_);
        for (auto* plot : w_.findChildren<QCustomPlot*>()) {
            disconnect(plot, &QCustomPlot::beforeReplot, this, &PresentationController::thicken);
            // Thickened graphs are rebuilt at their normal width on the next state.
            for (int i = 0; i < plot->graphCount(); ++i)
                if (plot->graph(i)->property("kvscopeThick").toBool()) {
                    QPen pen = plot->graph(i)->pen();
                    pen.setWidthF(pen.widthF() / kLineScale);
                    plot->graph(i)->setPen(pen);
                    QCPScatterStyle sc = plot->graph(i)->scatterStyle();
                    if (!sc.isNone()) {
                        sc.setSize(sc.size() / kMarkerScale);
                        if (sc.isPenDefined()) {
                            QPen ring = sc.pen();
                            ring.setWidthF(ring.widthF() / kMarkerPenScale);
                            sc.setPen(ring);
                        }
                        plot->graph(i)->setScatterStyle(sc);
                    }
                    plot->graph(i)->setProperty("kvscopeThick", false);
                }
            plot->replot(QCustomPlot::rpQueuedReplot);
        }
        if (!wasFullScreen_ && w_.isFullScreen())
            w_.showNormal();
    }
}

void PresentationController::thicken() {
    auto* plot = qobject_cast<QCustomPlot*>(sender());
    if (!plot || !active_)
        return;
    // Plots rebuild their graphs on every state; each new graph is thickened once.
    for (int i = 0; i < plot->graphCount(); ++i) {
        QCPGraph* g = plot->graph(i);
        if (g->property("kvscopeThick").toBool())
            continue;
        g->setProperty("kvscopeThick", true);
        QPen pen = g->pen();
        pen.setWidthF(std::max(1.0, pen.widthF()) * kLineScale);
        g->setPen(pen);
        QCPScatterStyle sc = g->scatterStyle();
        if (!sc.isNone()) {
            sc.setSize(sc.size() * kMarkerScale);
            // The ring too: a 1 px outline on a 15 px marker vanished on a projector.
            if (sc.isPenDefined()) {
                QPen ring = sc.pen();
                ring.setWidthF(std::max(1.0, ring.widthF()) * kMarkerPenScale);
                sc.setPen(ring);
            }
            g->setScatterStyle(sc);
        }
    }
}

QStringList PresentationController::shortcutLines() const {
    // The window's own list (F1's), so the overlay shows every shortcut F1 does.
    QStringList lines;
    for (const auto& [key, text] : w_.shortcutList())
        lines << key + QStringLiteral("\t") + text;
    return lines;
}

void PresentationController::showHelp() {
    if (help_)
        delete help_.data();
    help_ = new HelpOverlay(&w_, shortcutLines());
    help_->show();
    help_->raise();
    help_->setFocus();
}

void PresentationController::hideHelp() {
    if (help_)
        help_->hide();
}

void PresentationController::toggleHelp() {
    if (helpVisible())
        hideHelp();
    else
        showHelp();
}

bool PresentationController::helpVisible() const {
    return help_ && help_->isVisible();
}

} // namespace kvscope::ui
