// Story mode: a guided sequence of states (resources/stories/*.json or a teacher's own file).
// Each step sets the window's model, GPU and deployment, pins its comparison, emphasises a
// view and shows its caption with the key number in a bar above the views (never over data).
#pragma once

#include "core/features/story.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <optional>

class QLabel;
class QToolBar;
class QToolButton;
class QWidget;

namespace kvscope::ui {

class MainWindow;
class CompareController;

class StoryController : public QObject {
    Q_OBJECT
public:
    StoryController(MainWindow& w, CompareController* compare);

    /// Loads and starts a story at its first step. On error the window's state and the
    /// running story stay as they were, and `error` says which step and field.
    bool loadFile(const QString& path, QString* error = nullptr);
    bool loadBuiltin(const QString& name, QString* error = nullptr);
    bool start(kvscope::Story story, const QString& source, QString* error = nullptr);
    void close();

    bool active() const { return story_.has_value(); }
    const kvscope::Story* story() const { return story_ ? &*story_ : nullptr; }
    /// 0-based index of the step shown.
    int index() const { return static_cast<int>(cursor_.index()); }
    int count() const { return static_cast<int>(cursor_.count()); }
    /// Shows step `index` (0-based, clamped). False (banner, state kept) when core refuses it.
    bool goTo(int index, QString* error = nullptr);
    bool next();
    bool prev();
    bool first();
    bool last();
    /// The evaluated step shown now.
    const std::optional<kvscope::EvaluatedStep>& current() const { return current_; }
    /// The window view the step emphasises ("capacity", ...; empty for none).
    QString highlightedView() const { return highlightView_; }
    /// The caption bar (title, caption, key number, position).
    QWidget* bar() const { return bar_; }
    QString captionText() const;
    QString keyNumberText() const;

Q_SIGNALS:
    void stepChanged(int index);
    void activeChanged(bool active);

protected:
    bool eventFilter(QObject* o, QEvent* e) override;

private:
    void fitBar();
    bool show(std::size_t index, QString* error);
    void emphasise(const QString& view);

    MainWindow& w_;
    CompareController* compare_;
    std::optional<kvscope::Story> story_;
    QString source_;
    kvscope::StoryCursor cursor_;
    std::optional<kvscope::EvaluatedStep> current_;
    QString highlightView_;
    QToolBar* toolbar_ = nullptr;
    QWidget* bar_ = nullptr;
    QLabel* title_ = nullptr;
    QLabel* caption_ = nullptr;
    QLabel* keyNumber_ = nullptr;
    QLabel* position_ = nullptr;
    QToolButton* prevButton_ = nullptr;
    QToolButton* nextButton_ = nullptr;
    QPointer<QWidget> frame_;
};

/// The window view ("strips", "numbers", "roofline", "capacity", "intensity", or "compare")
/// that shows a story highlight view (core's kStoryViews).
QString windowViewFor(const QString& storyView);

} // namespace kvscope::ui
