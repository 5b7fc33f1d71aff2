// What the GUI tests share: the real window with the features installed, shown offscreen, its
// first refresh done. (tests/testutils.h has the fixture folders and the preset loaders.)
#pragma once

#include "ui/features.h"
#include "ui/mainwindow.h"

#include <memory>

namespace kvscope::test {

/// A window that neither reads nor writes QSettings and does not animate, at 1600 x 1000.
inline std::unique_ptr<ui::MainWindow> makeWindow() {
    auto w = std::make_unique<ui::MainWindow>(ui::MainWindow::Options{false, false});
    w->resize(1600, 1000);
    ui::installFeatures(*w, ui::FeatureOptions{});
    w->show();
    w->flushRefresh();
    return w;
}

} // namespace kvscope::test
