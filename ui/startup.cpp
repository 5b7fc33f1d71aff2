#include "ui/startup.h"

#include "core/model/presets.h"
#include "ui/controlspanel.h"
#include "ui/features.h"
#include "ui/mainwindow.h"
#include "ui/qcp.h"
#include "ui/qstrings.h"
#include "ui/session.h"
#include "ui/theme.h"
#include "ui/viewmodel.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QPixmap>
#include <QRegularExpression>
#include <algorithm>
#include <cstdio>
#include <vector>

namespace kvscope::ui {

namespace {
void settle(MainWindow& w) {
    for (int i = 0; i < 3; ++i)
        QApplication::processEvents();
    w.renderNow();
    // A new text can change a label's height (the numbers panel wraps its long lines): the
    // layout requests it posts take a round each to settle before the grab.
    for (int i = 0; i < 3; ++i)
        QApplication::processEvents();
}
} // namespace

QString startupUsage() {
    QString out = QStringLiteral(
        "usage: kvscope [state flags] [--theme light|dark] [--screenshot FILE.png [--size WxH]]\n"
        "               [--bench-ui [--steps N]] [--story FILE|chapter [--step N]] [--present]\n"
        "               [--session FILE] [--measurements FILE.json] [--version]\n\n"
        "state flags (the same as kvscope-cli size):\n");
    for (const auto& f : schemaFields()) {
        QString type;
        switch (f.kind) {
        case FieldKind::Integer:
            type = f.key == "h_kv" ? QStringLiteral("N|latent") : QStringLiteral("N");
            break;
        case FieldKind::Number:
            type = QStringLiteral("X");
            break;
        case FieldKind::Choice:
            for (const auto& w : f.words)
                type += (type.isEmpty() ? QString() : QStringLiteral("|")) + q(w);
            break;
        case FieldKind::Text:
            type = f.group == FieldGroup::Selection ? QStringLiteral("ID|PATH")
                                                    : QStringLiteral("TEXT");
            break;
        }
        QString left = QStringLiteral("  ") + q(f.flag) + QLatin1Char(' ') + type;
        left = left.size() < 34 ? left.leftJustified(34)
                                : left + QStringLiteral("\n") + QString(34, QLatin1Char(' '));
        out += left + q(f.help);
        if (!f.defaultText.empty())
            out += QStringLiteral(" (default ") + q(f.defaultText) + QLatin1Char(')');
        out += QLatin1Char('\n');
    }
    return out;
}

StartupOptions parseStartup(const QStringList& arguments) {
    StartupOptions o;
    const QStringList appValueFlags = {
        QStringLiteral("--size"),    QStringLiteral("--screenshot"),  QStringLiteral("--theme"),
        QStringLiteral("--steps"),   QStringLiteral("--story"),       QStringLiteral("--step"),
        QStringLiteral("--session"), QStringLiteral("--measurements")};
    auto integer = [&o](const QString& flag, const QString& v) -> std::optional<std::int64_t> {
        bool ok = false;
        const qlonglong n = v.toLongLong(&ok);
        if (!ok || n <= 0) {
            o.error = flag + QStringLiteral(": expected a positive integer, got '") + v +
                      QLatin1Char('\'');
            return std::nullopt;
        }
        return n;
    };
    for (int i = 1; i < arguments.size() && o.error.isEmpty(); ++i) {
        QString flag = arguments[i];
        QString value;
        const int eq = flag.indexOf(QLatin1Char('='));
        const bool hasInline = flag.startsWith(QLatin1String("--")) && eq > 0;
        if (hasInline) {
            value = flag.mid(eq + 1);
            flag = flag.left(eq);
        }
        const Field* field =
            flag.startsWith(QLatin1String("--")) ? findField(flag.toStdString()) : nullptr;
        if (!hasInline && (field || appValueFlags.contains(flag))) {
            if (i + 1 >= arguments.size()) {
                o.error = flag + QStringLiteral(": needs a value");
                break;
            }
            value = arguments[++i];
        }
        if (field) {
            if (flag != q(field->flag))
                reportDeprecation(flag.toStdString() + ": deprecated, use " + field->flag);
            const std::string text = value.toStdString();
            if (const std::string rule = field->check(text); !rule.empty())
                o.error = q(field->flag) + QStringLiteral(": ") + q(rule);
            o.state.emplace_back(field, text);
        } else if (flag == QLatin1String("--bench-ui"))
            o.benchUi = true;
        else if (flag == QLatin1String("--present"))
            o.present = true;
        else if (flag == QLatin1String("--story"))
            o.story = value;
        else if (flag == QLatin1String("--session"))
            o.session = value;
        else if (flag == QLatin1String("--measurements"))
            o.measurements = value;
        else if (flag == QLatin1String("--step")) {
            if (auto n = integer(flag, value))
                o.step = static_cast<int>(std::min<std::int64_t>(*n, 1000000));
        } else if (flag == QLatin1String("--screenshot"))
            o.screenshot = value;
        else if (flag == QLatin1String("--theme")) {
            if (value != QLatin1String("light") && value != QLatin1String("dark"))
                o.error = QStringLiteral("--theme: expected light or dark");
            o.theme = value;
        } else if (flag == QLatin1String("--steps")) {
            if (auto n = integer(flag, value))
                o.benchSteps = static_cast<int>(std::min<std::int64_t>(*n, 1000000));
        } else if (flag == QLatin1String("--size")) {
            static const QRegularExpression re(QStringLiteral("^(\\d{2,5})[xX](\\d{2,5})$"));
            const auto m = re.match(value);
            if (!m.hasMatch())
                o.error = QStringLiteral("--size: expected WxH, e.g. 1600x1000");
            else
                o.size = QSize(m.captured(1).toInt(), m.captured(2).toInt());
        } else if (flag.startsWith(QLatin1Char('-'))) {
            // Qt's own options (-platform, -style, ...) were consumed by QApplication already.
            o.error = flag + QStringLiteral(": unknown option");
        }
    }
    return o;
}

bool applyStartup(MainWindow& w, const StartupOptions& o, QString* error) {
    auto fail = [error](const QString& flag, const QString& why) {
        if (error)
            *error = flag + QStringLiteral(": ") + why;
        return false;
    };
    // The model first, then the GPU (the window's own loaders: presets, files, HF folders),
    // then the rest on top of the state they leave.
    FieldTexts rest;
    bool tpGiven = false, dcpGiven = false;
    QString err;
    for (const auto& [field, text] : o.state) {
        if (field->key == "model") {
            if (!w.loadModelRef(q(text), &err))
                return fail(q(field->flag), err);
        } else if (field->key == "gpu") {
            if (!w.loadGpuRef(q(text), &err))
                return fail(q(field->flag), err);
        } else {
            rest.emplace_back(field, text);
            tpGiven = tpGiven || field->key == "tp";
            dcpGiven = dcpGiven || field->key == "dcp";
        }
    }
    AppState s = w.state();
    FieldNotes notes;
    auto applied = applyFieldTexts(sessionFromState(s), rest, &notes);
    if (!applied.ok()) {
        if (error)
            *error = q(applied.error().message());
        return false;
    }
    if (notes.latentRequested && !s.model.mla)
        return fail(QStringLiteral("--h-kv"), QStringLiteral("this model has no MLA latent"));
    Deployment& d = s.deployment;
    d = applied->deployment;
    if (d.kvHeads && !s.model.mla && *d.kvHeads == s.model.kvHeads.value)
        d.kvHeads.reset();
    if (applied->customGpu)
        s.gpu = *applied->customGpu;
    // A TP flag without --dcp keeps DCP only when it still validates.
    if (tpGiven && !dcpGiven && !validate(s.model, s.gpu, d).ok())
        d.dcp = 1;
    if (!w.applyState(s, &err)) {
        if (error)
            *error = err;
        return false;
    }
    return true;
}

bool applyStartupOrReport(MainWindow& w, const StartupOptions& o) {
    w.resize(o.size);
    QString err;
    if (applyStartup(w, o, &err))
        return true;
    std::fprintf(stderr, "error: %s\n", qPrintable(err));
    return false;
}

int runScreenshot(const StartupOptions& o) {
    MainWindow w(MainWindow::Options{false, false});
    if (!applyStartupOrReport(w, o))
        return 2;
    QString err;
    // --story/--step/--present/--session: the step's state replaces the flags' state.
    installFeatures(w, FeatureOptions{o.story, o.step, o.present, o.session, o.measurements}, &err);
    if (!err.isEmpty()) {
        std::fprintf(stderr, "error: %s\n", qPrintable(err));
        return 2;
    }
    w.hideBanner();
    w.show();
    w.resize(o.size);
    settle(w);
    const QImage img = w.grab().toImage();
    if (img.isNull() || !img.save(o.screenshot)) {
        std::fprintf(stderr, "error: --screenshot: could not write %s\n", qPrintable(o.screenshot));
        return 1;
    }
    std::printf("wrote %s (%dx%d)\n", qPrintable(o.screenshot), img.width(), img.height());
    return 0;
}

} // namespace kvscope::ui
