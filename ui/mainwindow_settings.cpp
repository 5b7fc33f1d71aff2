// What the window keeps between runs in QSettings: the recent files, the theme, the window
// geometry and the last state as a session (with the per-key layout of earlier builds read back).
#include "core/features/session.h"
#include "core/model/presets.h"
#include "ui/mainwindow.h"
#include "ui/qstrings.h"
#include "ui/session.h"
#include "ui/theme.h"
#include "ui/viewmodel.h"

#include <QCloseEvent>
#include <QFileInfo>
#include <QMenu>
#include <QSettings>

namespace kvscope::ui {

namespace {
constexpr int kMaxRecent = 8;
} // namespace

void MainWindow::addRecent(const QString& path) {
    recent_.removeAll(path);
    recent_.prepend(path);
    while (recent_.size() > kMaxRecent)
        recent_.removeLast();
    rebuildRecentMenu();
    if (options_.persist)
        QSettings().setValue(QStringLiteral("recentFiles"), recent_);
}

void MainWindow::rebuildRecentMenu() {
    recentMenu_->clear();
    for (const QString& path : recent_)
        recentMenu_->addAction(QFileInfo(path).fileName() + QStringLiteral("  —  ") + path, this,
                               [this, path] { loadModelRef(path); });
    if (recent_.isEmpty())
        recentMenu_->addAction(tr("(none yet)"))->setEnabled(false);
    else {
        recentMenu_->addSeparator();
        recentMenu_->addAction(tr("Clear"), this, [this] {
            recent_.clear();
            rebuildRecentMenu();
            if (options_.persist)
                QSettings().setValue(QStringLiteral("recentFiles"), recent_);
        });
    }
}

void MainWindow::setTheme(bool dark) {
    applyTheme(dark ? ThemeMode::Dark : ThemeMode::Light);
    if (options_.persist)
        QSettings().setValue(QStringLiteral("theme"), toString(currentTheme()));
    if (bannerVisible())
        showBanner(bannerLabel_->text().mid(3), true);
}

void MainWindow::closeEvent(QCloseEvent* e) {
    if (options_.persist)
        saveSettings();
    QMainWindow::closeEvent(e);
}

namespace {
/// The state as earlier builds saved it: one QSettings key per knob under "state/".
Session legacySettingsSession(QSettings& st) {
    Session out;
    st.beginGroup(QStringLiteral("state"));
    out.model = s8(st.value(QStringLiteral("model")).toString());
    out.gpu = s8(st.value(QStringLiteral("gpu")).toString());
    if (out.gpu == "custom") {
        GpuSpec g;
        g.id = "custom";
        g.name = s8(st.value(QStringLiteral("gpuName")).toString());
        g.memoryBytes = st.value(QStringLiteral("gpuMemoryBytes")).toLongLong();
        g.bandwidthBytesPerS = st.value(QStringLiteral("gpuBandwidth")).toDouble();
        g.peakBf16FlopPerS = st.value(QStringLiteral("gpuBf16")).toDouble();
        g.peakFp32FlopPerS = st.value(QStringLiteral("gpuFp32")).toDouble();
        g.gpusPerNode = st.value(QStringLiteral("gpuPerNode")).toLongLong();
        out.customGpu = g;
    }
    Deployment& d = out.deployment;
    d.tp = st.value(QStringLiteral("tp"), 1).toLongLong();
    d.dcp = st.value(QStringLiteral("dcp"), 1).toLongLong();
    if (const qlonglong kv = st.value(QStringLiteral("kvHeads"), 0).toLongLong(); kv > 0)
        d.kvHeads = kv;
    d.context = st.value(QStringLiteral("context"), 8192).toLongLong();
    d.batch = st.value(QStringLiteral("batch"), 1).toLongLong();
    if (auto k = parseKvDtype(s8(st.value(QStringLiteral("kvDtype")).toString())); k.ok())
        d.kvDtype = *k;
    d.gpuMemUtil = st.value(QStringLiteral("util"), 0.9).toDouble();
    if (auto p = parsePoolModel(s8(st.value(QStringLiteral("poolModel")).toString())); p.ok())
        d.poolModel = *p;
    st.endGroup();
    return out;
}
} // namespace

void MainWindow::saveSettings() const {
    QSettings st;
    st.setValue(QStringLiteral("window/geometry"), saveGeometry());
    st.setValue(QStringLiteral("window/state"), saveState(1));
    st.setValue(QStringLiteral("theme"), toString(currentTheme()));
    // The whole state as one session JSON value (core/features/session.h): every schema field comes
    // back on restart, and a field added to the schema needs nothing here.
    st.setValue(QStringLiteral("session"), q(sessionToJson(sessionFromState(state_))));
    st.remove(QStringLiteral("state")); // the per-key layout of earlier builds
}

void MainWindow::loadSettings() {
    QSettings st;
    if (!restoreGeometry(st.value(QStringLiteral("window/geometry")).toByteArray()))
        resize(1600, 1000);
    restoreState(st.value(QStringLiteral("window/state")).toByteArray(), 1);
    // The last state, re-validated: anything the current build refuses is dropped quietly.
    AppState s = state_;
    Session saved;
    if (st.contains(QStringLiteral("session"))) {
        auto parsed = parseSession(s8(st.value(QStringLiteral("session")).toString()));
        if (!parsed.ok())
            return;
        saved = std::move(parsed).value();
    } else if (st.contains(QStringLiteral("state/model"))) {
        saved = legacySettingsSession(st);
    } else {
        return;
    }
    if (auto m = loadModel(saved.model); m.ok()) {
        s.modelRef = saved.model;
        s.model = std::move(m).value();
    }
    if (saved.customGpu) {
        if (validateGpu(*saved.customGpu).ok())
            s.gpu = *saved.customGpu;
    } else if (auto g = loadGpu(saved.gpu); g.ok()) {
        s.gpu = std::move(g).value();
    }
    s.deployment = fitDeployment(s.model, s.gpu, saved.deployment);
    applyState(s);
}

} // namespace kvscope::ui
