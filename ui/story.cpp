#include "ui/story.h"

#include "core/features/export.h"
#include "ui/compare.h"
#include "ui/mainwindow.h"
#include "ui/qstrings.h"
#include "ui/theme.h"

#include <QDockWidget>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

namespace kvscope::ui {

namespace {
/// A border drawn over a view's edge (mouse events pass through): the step's emphasis.
class EmphasisFrame : public QWidget {
public:
    explicit EmphasisFrame(QWidget* target) : QWidget(target->parentWidget()), target_(target) {
        setAttribute(Qt::WA_TransparentForMouseEvents);
        setAttribute(Qt::WA_NoSystemBackground);
        setObjectName(QStringLiteral("storyEmphasis"));
        target->installEventFilter(this);
        follow();
        show();
        raise();
    }
    ~EmphasisFrame() override {
        if (target_)
            target_->removeEventFilter(this);
    }

protected:
    bool eventFilter(QObject* o, QEvent* e) override {
        if (o == target_ && (e->type() == QEvent::Move || e->type() == QEvent::Resize ||
                             e->type() == QEvent::Show || e->type() == QEvent::Hide))
            follow();
        return false;
    }
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.setRenderHint(QPainter::Antialiasing);
        QPen pen(accentColor(isDark(this)), 4);
        p.setPen(pen);
        p.drawRoundedRect(QRectF(rect()).adjusted(2, 2, -2, -2), 6, 6);
    }

private:
    void follow() {
        if (!target_)
            return;
        setGeometry(target_->geometry());
        setVisible(target_->isVisible());
        raise();
    }
    QPointer<QWidget> target_;
};
} // namespace

QString windowViewFor(const QString& v) {
    if (v == QLatin1String("cell") || v == QLatin1String("layers"))
        return QStringLiteral("strips");
    if (v == QLatin1String("pool") || v == QLatin1String("weights") || v == QLatin1String("paging"))
        return QStringLiteral("numbers");
    if (v == QLatin1String("capacity") || v == QLatin1String("tp"))
        return QStringLiteral("capacity");
    if (v == QLatin1String("roofline"))
        return QStringLiteral("roofline");
    if (v == QLatin1String("compare"))
        return QStringLiteral("compare");
    return {};
}

StoryController::StoryController(MainWindow& w, CompareController* compare)
    : QObject(&w), w_(w), compare_(compare) {
    setObjectName(QStringLiteral("kvscopeStory"));
    bar_ = new QWidget;
    bar_->setObjectName(QStringLiteral("storyBar"));
    auto* h = new QHBoxLayout(bar_);
    h->setContentsMargins(10, 6, 10, 6);
    h->setSpacing(14);
    prevButton_ = new QToolButton(bar_);
    prevButton_->setText(QStringLiteral("◀"));
    prevButton_->setToolTip(tr("Previous step (Left, PageUp)"));
    nextButton_ = new QToolButton(bar_);
    nextButton_->setText(QStringLiteral("▶"));
    nextButton_->setToolTip(tr("Next step (Right, PageDown, Space)"));
    for (auto* b : {prevButton_, nextButton_}) {
        b->setAutoRaise(true);
        b->setFocusPolicy(Qt::NoFocus);
        b->setFont(scaledFont(bar_->font(), 1.6));
    }
    connect(prevButton_, &QToolButton::clicked, this, &StoryController::prev);
    connect(nextButton_, &QToolButton::clicked, this, &StoryController::next);
    auto* text = new QVBoxLayout;
    text->setSpacing(2);
    title_ = new QLabel(bar_);
    title_->setObjectName(QStringLiteral("storyTitle"));
    title_->setFont(scaledFont(bar_->font(), 1.45, true));
    caption_ = new QLabel(bar_);
    caption_->setObjectName(QStringLiteral("storyCaption"));
    caption_->setWordWrap(true);
    caption_->setFont(scaledFont(bar_->font(), 1.25));
    caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    caption_->setMinimumWidth(400);
    // Centred as a block: the bar's height follows the caption's longest wrap.
    text->addStretch(1);
    text->addWidget(title_);
    text->addWidget(caption_);
    text->addStretch(1);
    keyNumber_ = new QLabel(bar_);
    keyNumber_->setObjectName(QStringLiteral("storyKeyNumber"));
    keyNumber_->setAlignment(Qt::AlignCenter);
    keyNumber_->setTextFormat(Qt::RichText);
    keyNumber_->setMinimumWidth(200);
    keyNumber_->setFont(scaledFont(bar_->font(), 1.2));
    position_ = new QLabel(bar_);
    position_->setObjectName(QStringLiteral("storyPosition"));
    position_->setFont(scaledFont(bar_->font(), 1.1));
    h->addWidget(prevButton_);
    h->addLayout(text, 1);
    h->addWidget(keyNumber_);
    h->addWidget(position_);
    h->addWidget(nextButton_);

    toolbar_ = new QToolBar(tr("Story"), &w);
    toolbar_->setObjectName(QStringLiteral("storyToolBar"));
    toolbar_->setMovable(false);
    toolbar_->setFloatable(false);
    toolbar_->toggleViewAction()->setVisible(false);
    toolbar_->addWidget(bar_);
    w.addToolBar(Qt::TopToolBarArea, toolbar_);
    w.installEventFilter(this);
    toolbar_->hide();
}

bool StoryController::loadFile(const QString& path, QString* error) {
    auto s = loadStoryFile(path.toStdString());
    if (!s.ok()) {
        const QString msg = tr("Story %1: %2").arg(path, q(s.error().message()));
        if (error)
            *error = msg;
        w_.showBanner(msg, true);
        return false;
    }
    return start(std::move(s).value(), path, error);
}

bool StoryController::loadBuiltin(const QString& name, QString* error) {
    auto s = loadBuiltinStory(name.toStdString());
    if (!s.ok()) {
        const QString msg = tr("Story %1: %2").arg(name, q(s.error().message()));
        if (error)
            *error = msg;
        w_.showBanner(msg, true);
        return false;
    }
    return start(std::move(s).value(), name, error);
}

bool StoryController::start(Story story, const QString& source, QString* error) {
    if (story.steps.empty()) {
        const QString msg = tr("Story %1: steps: must hold at least one step").arg(source);
        if (error)
            *error = msg;
        w_.showBanner(msg, true);
        return false;
    }
    // Keep the running story (and the state) when the new one's first step is refused.
    auto evaluated = evaluateStep(story.steps.front());
    if (!evaluated.ok()) {
        const QString msg =
            tr("Story %1: steps[0]: %2").arg(source, q(evaluated.error().message()));
        if (error)
            *error = msg;
        w_.showBanner(msg, true);
        return false;
    }
    story_ = std::move(story);
    source_ = source;
    cursor_ = StoryCursor(story_->steps.size());
    toolbar_->show();
    Q_EMIT activeChanged(true);
    return show(0, error);
}

void StoryController::close() {
    if (!story_)
        return;
    story_.reset();
    current_.reset();
    cursor_ = StoryCursor();
    toolbar_->hide();
    emphasise({});
    Q_EMIT activeChanged(false);
}

bool StoryController::goTo(int index, QString* error) {
    if (!story_)
        return false;
    return show(static_cast<std::size_t>(std::max(0, index)), error);
}

bool StoryController::next() {
    return story_ && !cursor_.atLast() && show(cursor_.index() + 1, nullptr);
}
bool StoryController::prev() {
    return story_ && !cursor_.atFirst() && show(cursor_.index() - 1, nullptr);
}
bool StoryController::first() {
    return story_ && show(0, nullptr);
}
bool StoryController::last() {
    return story_ && show(cursor_.count() - 1, nullptr);
}

bool StoryController::show(std::size_t index, QString* error) {
    StoryCursor target = cursor_;
    target.goTo(index);
    const StoryStep& step = story_->steps[target.index()];
    auto fail = [&](const QString& why) {
        const QString msg = tr("Story step %1: %2").arg(target.index() + 1).arg(why);
        if (error)
            *error = msg;
        w_.showBanner(msg, true);
        return false;
    };
    auto ev = evaluateStep(step);
    if (!ev.ok())
        return fail(q(ev.error().message()));
    AppState s;
    s.modelRef = step.state.model;
    s.model = ev->scenario.model;
    s.gpu = ev->scenario.gpu;
    s.deployment = ev->scenario.deployment;
    QString err;
    if (!w_.applyState(s, &err))
        return fail(err);
    cursor_ = target;
    current_ = std::move(ev).value();
    if (w_.bannerVisible())
        w_.hideBanner();

    if (compare_) {
        if (current_->compareScenario && current_->comparison && step.compareWith) {
            AppState a;
            a.modelRef = step.compareWith->model;
            a.model = current_->compareScenario->model;
            a.gpu = current_->compareScenario->gpu;
            a.deployment = current_->compareScenario->deployment;
            compare_->pin(a, current_->comparison->a);
        } else {
            compare_->unpin();
        }
    }

    title_->setText(q(step.title));
    caption_->setText(q(step.caption));
    position_->setText(QStringLiteral("%1 / %2").arg(cursor_.index() + 1).arg(cursor_.count()));
    prevButton_->setEnabled(!cursor_.atFirst());
    nextButton_->setEnabled(!cursor_.atLast());
    keyNumber_->setText(keyNumberText());
    keyNumber_->setVisible(!keyNumber_->text().isEmpty());
    emphasise(windowViewFor(q(step.highlight.view)));
    fitBar();
    w_.setWindowTitle(tr("kvscope — %1 (%2 / %3)")
                          .arg(q(story_->title))
                          .arg(cursor_.index() + 1)
                          .arg(cursor_.count()));
    Q_EMIT stepChanged(static_cast<int>(cursor_.index()));
    return true;
}

void StoryController::fitBar() {
    // The bar is as tall as the caption needs at the window's width, no taller.
    if (auto* l = bar_->layout(); l && l->hasHeightForWidth())
        bar_->setFixedHeight(l->heightForWidth(std::max(640, w_.width() - 16)));
}

bool StoryController::eventFilter(QObject* o, QEvent* e) {
    if (o == &w_ && e->type() == QEvent::Resize && story_)
        fitBar();
    return QObject::eventFilter(o, e);
}

QString StoryController::captionText() const {
    return caption_->text();
}

QString StoryController::keyNumberText() const {
    if (!story_ || !current_)
        return {};
    const std::string& key = story_->steps[cursor_.index()].highlight.number;
    if (key.empty())
        return {};
    for (const ReportNumber& n : reportNumbers(current_->report))
        if (n.key == key) {
            const QColor acc = accentColor(isDark(&w_));
            return QStringLiteral("<div style='color:%1'>%2<br><span style='font-size:xx-large; "
                                  "font-weight:bold'>%3</span></div>")
                .arg(acc.name(), q(n.label).toHtmlEscaped(),
                     q(formatNumberHuman(n)).toHtmlEscaped());
        }
    return {};
}

void StoryController::emphasise(const QString& view) {
    highlightView_ = view;
    if (frame_)
        delete frame_.data();
    if (view.isEmpty())
        return;
    QWidget* target = nullptr;
    if (view == QLatin1String("compare"))
        target = compare_ && compare_->dock() ? compare_->dock()->widget() : nullptr;
    else
        target = w_.viewWidget(view);
    if (!target || !target->parentWidget())
        return;
    // A view in a hidden (or tabbed-away) dock comes to the front.
    for (QWidget* p = target; p; p = p->parentWidget())
        if (auto* d = qobject_cast<QDockWidget*>(p)) {
            d->show();
            d->raise();
            break;
        }
    frame_ = new EmphasisFrame(target);
}

} // namespace kvscope::ui
