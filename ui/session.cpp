#include "ui/session.h"

#include "core/model/presets.h"
#include "ui/mainwindow.h"
#include "ui/qstrings.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QLabel>
#include <QListWidget>
#include <QVBoxLayout>

namespace kvscope::ui {

namespace {
bool sameGpu(const GpuSpec& a, const GpuSpec& b) {
    return a.memoryBytes == b.memoryBytes && a.driverMemoryBytes == b.driverMemoryBytes &&
           a.bandwidthBytesPerS == b.bandwidthBytesPerS &&
           a.peakBf16FlopPerS == b.peakBf16FlopPerS && a.peakFp8FlopPerS == b.peakFp8FlopPerS &&
           a.peakFp32FlopPerS == b.peakFp32FlopPerS && a.gpusPerNode == b.gpusPerNode;
}
} // namespace

Session sessionFromState(const AppState& s) {
    Session out;
    out.model = s.modelRef;
    out.deployment = s.deployment;
    auto preset = s.gpu.id.empty() ? Result<GpuSpec>(Error{"gpu", "no id"}) : loadGpu(s.gpu.id);
    if (preset.ok() && sameGpu(*preset, s.gpu))
        out.gpu = s.gpu.id;
    else
        out.customGpu = s.gpu;
    return out;
}

bool stateFromSession(const Session& session, AppState* out, QString* error) {
    auto sc = resolveSession(session);
    if (!sc.ok()) {
        if (error)
            *error = q(sc.error().message());
        return false;
    }
    out->modelRef = session.model;
    out->model = sc->model;
    out->gpu = sc->gpu;
    out->deployment = sc->deployment;
    return true;
}

bool saveWindowSession(const MainWindow& w, const QString& path, QString* error) {
    auto st = saveSessionFile(sessionFromState(w.state()), path.toStdString());
    if (!st.ok()) {
        if (error)
            *error = q(st.error().message());
        return false;
    }
    return true;
}

bool loadWindowSession(MainWindow& w, const QString& path, QString* error) {
    auto s = loadSessionFile(path.toStdString());
    if (!s.ok()) {
        if (error)
            *error = q(s.error().message());
        return false;
    }
    AppState st;
    if (!stateFromSession(*s, &st, error))
        return false;
    return w.applyState(st, error);
}

void openFromHuggingFaceCache(MainWindow& w) {
    const auto configs = findHuggingFaceConfigs();
    QDialog dlg(&w);
    dlg.setWindowTitle(QObject::tr("Open a model from the Hugging Face cache"));
    auto* v = new QVBoxLayout(&dlg);
    v->addWidget(new QLabel(
        QObject::tr("config.json files under %1").arg(q(huggingFaceHubDir()).toHtmlEscaped()),
        &dlg));
    auto* list = new QListWidget(&dlg);
    list->setObjectName(QStringLiteral("hfList"));
    for (const auto& c : configs) {
        auto* item = new QListWidgetItem(q(c.repoId), list);
        item->setData(Qt::UserRole, q(c.path));
        item->setToolTip(q(c.path));
    }
    if (configs.empty())
        list->addItem(QObject::tr("(no models found in the cache)"));
    v->addWidget(list, 1);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, &dlg);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
    QObject::connect(list, &QListWidget::itemDoubleClicked, &dlg, &QDialog::accept);
    v->addWidget(buttons);
    dlg.resize(640, 420);
    if (dlg.exec() != QDialog::Accepted || !list->currentItem())
        return;
    const QString path = list->currentItem()->data(Qt::UserRole).toString();
    if (!path.isEmpty())
        w.loadModelRef(path); // a refused config shows the window's own banner
}

} // namespace kvscope::ui
