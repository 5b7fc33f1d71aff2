// Presentation mode: full screen, larger type, thicker plot lines, a high-contrast palette;
// and a help overlay listing every shortcut of the window (F5 / "?" toggle them).
#pragma once

#include <QByteArray>
#include <QFont>
#include <QObject>
#include <QPalette>
#include <QPointer>

class QWidget;

namespace kvscope::ui {

class MainWindow;

class PresentationController : public QObject {
    Q_OBJECT
public:
    explicit PresentationController(MainWindow& w);

    bool active() const { return active_; }
    /// `fullScreen` false keeps the window's size (screenshots, tests).
    void setActive(bool on, bool fullScreen = true);
    void toggle() { setActive(!active_); }

    /// The help overlay: every shortcut of the window's actions, over the whole window.
    void showHelp();
    void hideHelp();
    void toggleHelp();
    bool helpVisible() const;
    /// "Key — what it does" lines the overlay lists.
    QStringList shortcutLines() const;

private:
    void thicken();

    MainWindow& w_;
    bool active_ = false;
    bool wasFullScreen_ = false;
    QFont oldFont_;
    QByteArray oldLayout_; ///< dock layout before presenting (the side docks are hidden)
    QPalette oldPalette_;
    QPointer<QWidget> help_;
};

} // namespace kvscope::ui
