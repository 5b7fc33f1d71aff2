// Command-line flags shared by the app's normal start, --screenshot and --bench-ui: the state
// flags are the deployment schema's (core/features/schema.h), spelled as in kvscope-cli (--model
// --gpu
// --tp ... --gpu-mem-util --pool-gib --block-size, the custom-GPU figures); then the app's own
// --theme --size --screenshot --bench-ui --story --step --present --session --measurements.
#pragma once

#include "core/features/schema.h"

#include <QSize>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <optional>

namespace kvscope::ui {

class MainWindow;

struct StartupOptions {
    QString screenshot;   ///< --screenshot FILE.png
    bool benchUi = false; ///< --bench-ui
    int benchSteps = 1000;
    QSize size{1600, 1000};
    std::optional<QString> theme;
    kvscope::FieldTexts state; ///< the schema flags given, checked, in order
    QString story;             ///< --story FILE (or a bundled story's name, "chapter")
    std::optional<int> step;   ///< --step N, 1-based
    bool present = false;      ///< --present
    QString session;           ///< --session FILE
    QString measurements;      ///< --measurements FILE (kvscope-cli measure --json)
    QString error;             ///< "--flag: rule" when parsing failed
};

StartupOptions parseStartup(const QStringList& arguments);
/// Applies the state flags to the window (model first, then GPU, then the deployment);
/// false and `error` ("--tp: ...") when core refuses them.
bool applyStartup(MainWindow& w, const StartupOptions& o, QString* error);
/// The window at the options' size with applyStartup's state; on a refusal, one `error:` line
/// on stderr and false (the headless modes then exit 2).
bool applyStartupOrReport(MainWindow& w, const StartupOptions& o);
/// Renders the real window offscreen at the requested state and writes the PNG.
int runScreenshot(const StartupOptions& o);
/// The usage text for --help (the state flags listed from the schema).
QString startupUsage();

} // namespace kvscope::ui
