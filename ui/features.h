// The app's features and the measurement overlay, installed on a MainWindow through its
// public seam (menus, state, views): story mode, presentation mode, compare, plan, explain an
// engine log, sessions, PDF / numbers export and the Measure action.
#pragma once

#include <QObject>
#include <QString>
#include <optional>

class QMenu;

namespace kvscope::ui {

class MainWindow;
class StoryController;
class CompareController;
class MeasureController;
class PresentationController;

struct FeatureOptions {
    QString storyPath;        ///< --story FILE (a path, or a bundled story's name: "chapter")
    std::optional<int> step;  ///< --step N, 1-based (the first step is 1)
    bool present = false;     ///< --present: start in presentation mode
    QString sessionPath;      ///< --session FILE
    QString measurementsPath; ///< --measurements FILE: measured points and ceilings to overlay
};

/// Owns the feature controllers (a child of the window; find it with features()).
class Features : public QObject {
    Q_OBJECT
public:
    explicit Features(MainWindow& w);
    StoryController* story() const { return story_; }
    CompareController* compare() const { return compare_; }
    MeasureController* measure() const { return measure_; }
    PresentationController* presentation() const { return presentation_; }

    // The File/Tools actions, callable without their dialogs (tests, the command line).
    bool openSession(const QString& path, QString* error = nullptr);
    bool saveSession(const QString& path, QString* error = nullptr);
    bool exportPdf(const QString& path, QString* error = nullptr);
    /// "csv", "json" or "markdown" by the suffix (.csv, .json, .md).
    bool exportNumbers(const QString& path, QString* error = nullptr);
    void copyNumbers();

private:
    /// One helper per menu; each action is on the window too, so its shortcut works anywhere.
    void installActions();
    void installFileActions();
    void installViewActions();
    void installStoryActions(QMenu* storyMenu); ///< View → Story: the stories and the step keys
    void installToolsActions();

    MainWindow& w_;
    StoryController* story_ = nullptr;
    CompareController* compare_ = nullptr;
    MeasureController* measure_ = nullptr;
    PresentationController* presentation_ = nullptr;
};

/// Adds every feature's actions (with shortcuts) to the window's menus and applies the
/// options: a session first, then a story and its step, then measurements, then presentation
/// mode. A refused
/// option shows a banner and leaves the state as it was; `error` (when given) gets it too.
Features* installFeatures(MainWindow& w, const FeatureOptions& o, QString* error = nullptr);
/// The features installed on `w`, or nullptr.
Features* features(const MainWindow& w);

} // namespace kvscope::ui
