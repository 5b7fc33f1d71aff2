// kvscope: the desktop app. `kvscope --screenshot FILE.png` and `kvscope --bench-ui` run
// offscreen and exit; the state flags (--model --gpu --tp --h-kv ...) work for both and for a
// normal start.
#include "core/version.h"
#include "ui/benchui.h"
#include "ui/features.h"
#include "ui/mainwindow.h"
#include "ui/startup.h"
#include "ui/theme.h"

#include <QApplication>
#include <QSettings>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
    // Screenshots and the benchmark need no display.
    bool headless = false;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--screenshot") == 0 || std::strcmp(argv[i], "--bench-ui") == 0 ||
            std::strncmp(argv[i], "--screenshot=", 13) == 0)
            headless = true;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::fputs(kvscope::ui::startupUsage().toUtf8().constData(), stdout);
            return 0;
        } else if (std::strcmp(argv[i], "--version") == 0) {
            std::printf("kvscope %s\n", kvscope::kVersion);
            return 0;
        }
    if (headless && !std::getenv("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");

    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("kvscope"));
    QApplication::setOrganizationName(QStringLiteral("kvscope"));
    QApplication::setApplicationDisplayName(QStringLiteral("kvscope"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/kvscope.svg")));

    const kvscope::ui::StartupOptions o = kvscope::ui::parseStartup(QApplication::arguments());
    if (!o.error.isEmpty()) {
        std::fprintf(stderr, "error: %s\n%s", qPrintable(o.error),
                     qPrintable(kvscope::ui::startupUsage()));
        return 2;
    }
    QFont f = QApplication::font();
    f.setPointSizeF(10.5);
    QApplication::setFont(f);

    using kvscope::ui::ThemeMode;
    ThemeMode theme = ThemeMode::Light;
    if (o.theme)
        theme = *o.theme == QLatin1String("dark") ? ThemeMode::Dark : ThemeMode::Light;
    else if (!headless &&
             QSettings().value(QStringLiteral("theme")).toString() == QLatin1String("dark"))
        theme = ThemeMode::Dark;
    kvscope::ui::applyTheme(theme);

    if (!o.screenshot.isEmpty())
        return kvscope::ui::runScreenshot(o);
    if (o.benchUi)
        return kvscope::ui::runBenchSweep(o);

    kvscope::ui::MainWindow w;
    QString err;
    if (!kvscope::ui::applyStartup(w, o, &err))
        w.showBanner(err, true);
    kvscope::ui::installFeatures(w, {o.story, o.step, o.present, o.session, o.measurements});
    w.show();
    return QApplication::exec();
}
