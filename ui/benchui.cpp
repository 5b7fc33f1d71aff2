#include "ui/benchui.h"

#include "core/model/presets.h"
#include "ui/controlspanel.h"
#include "ui/mainwindow.h"
#include "ui/qcp.h"

#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QSlider>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kvscope::ui {

namespace {

double percentile(std::vector<double> v, double p) {
    if (v.empty())
        return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t k = std::min(
        v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
    return v[k];
}

QString loadAverage() {
    QFile f(QStringLiteral("/proc/loadavg"));
    if (!f.open(QIODevice::ReadOnly))
        return QStringLiteral("n/a");
    return QString::fromLatin1(f.readLine()).section(QLatin1Char(' '), 0, 2);
}

struct Step {
    double ms;
    std::string where; ///< "deepseek-v3 TP → 128"
};

// One user step: the change, the refresh it queued, the replots, and the paint of every widget
// it dirtied (Qt repaints dirty regions only). Not inlined, so a profiler can collect just
// this (valgrind --tool=callgrind --toggle-collect='*benchOneStep*').
double threadCpuMs() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

std::vector<double> g_cpuMs; ///< each step's CPU time on the GUI thread

[[gnu::noinline]] double benchOneStep(MainWindow& w, const std::function<void()>& change) {
    QElapsedTimer clock;
    const double cpu0 = threadCpuMs();
    clock.start();
    change();
    w.flushRefresh();
    QApplication::processEvents();
    QApplication::processEvents();
    g_cpuMs.push_back(threadCpuMs() - cpu0);
    return static_cast<double>(clock.nsecsElapsed()) / 1e6;
}

// KVSCOPE_BENCH_TRACE=1: counts the layout requests and paints each widget receives, so a
// step that relayouts or repaints more than it changed shows which widget does.
class EventCounter : public QObject {
public:
    std::map<std::string, int> layouts, paints, resizes;
    bool eventFilter(QObject* o, QEvent* e) override {
        if (e->type() == QEvent::LayoutRequest || e->type() == QEvent::Paint ||
            e->type() == QEvent::Resize) {
            std::string name = o->metaObject()->className();
            for (QObject* p = o; p; p = p->parent())
                if (!p->objectName().isEmpty()) {
                    name += " in " + p->objectName().toStdString();
                    break;
                }
            ++(e->type() == QEvent::Paint    ? paints
               : e->type() == QEvent::Resize ? resizes
                                             : layouts)[name];
        }
        return false;
    }
};

// One control's series: its name in the report, the control, its combo box's objectName (null
// for a slider) and each of its steps' wall-clock time.
struct Series {
    const char* name;
    Control control;
    const char* combo;
    std::vector<double> ms;
};

// Every control of each model in turn, end to end, timing each step; stops after `limit` steps
// when that is not negative.
class Sweep {
public:
    Sweep(MainWindow& w, int limit) : w_(w), panel_(w.controlsPanel()), limit_(limit) {}

    bool full() const { return limit_ >= 0 && static_cast<int>(steps_.size()) >= limit_; }
    /// Switches to the model `id` (timed on its own) and sweeps every control.
    void sweepModel(const std::string& id);
    /// The figures, the slowest steps, the plots' replot times and (with the trace on) the
    /// widgets that relayout or repaint on a quarter of the steps or more.
    void report(const QString& loadBefore, const EventCounter& counter) const;

private:
    void stepOnce(Series& s, int delta);
    /// Steps by `delta` while the slider is short of `target` (past it, for a negative delta),
    /// until it stops moving.
    void stepToward(Series& s, const QSlider* sl, int delta, int target);
    void sweepSlider(Series& s);
    void sweepCombo(Series& s);

    MainWindow& w_;
    ControlsPanel* panel_;
    int limit_;
    Series series_[8] = {
        {"h_kv", Control::KvHeads, nullptr, {}}, {"TP", Control::Tp, nullptr, {}},
        {"DCP", Control::Dcp, nullptr, {}},      {"context", Control::Context, nullptr, {}},
        {"batch", Control::Batch, nullptr, {}},  {"dtype", Control::KvDtype, "kvDtypeCombo", {}},
        {"util", Control::Util, nullptr, {}},    {"pool", Control::PoolModel, "poolModelCombo", {}},
    };
    std::vector<double> switches_;
    std::vector<Step> steps_;
    std::vector<double> cpu_;
    std::string modelId_;
    int models_ = 0;
};

void Sweep::sweepModel(const std::string& id) {
    modelId_ = id;
    switches_.push_back(benchOneStep(w_, [&] { w_.loadModelRef(QString::fromStdString(id)); }));
    ++models_;
    for (Series& s : series_) {
        if (s.combo)
            sweepCombo(s);
        else
            sweepSlider(s);
    }
}

void Sweep::stepOnce(Series& s, int delta) {
    const double ms = benchOneStep(w_, [&] { panel_->step(s.control, delta); });
    cpu_.push_back(g_cpuMs.back());
    s.ms.push_back(ms);
    const std::int64_t tp = w_.state().deployment.tp;
    steps_.push_back({ms, modelId_ + " " + s.name + (delta > 0 ? " up" : " down") + " (TP " +
                              std::to_string(tp) + ")"});
}

void Sweep::stepToward(Series& s, const QSlider* sl, int delta, int target) {
    for (int guard = 0;
         (delta > 0 ? sl->value() < target : sl->value() > target) && guard < 1000 && !full();
         ++guard) {
        const int before = sl->value();
        stepOnce(s, delta);
        if (sl->value() == before)
            break;
    }
}

// A slider end to end: up to its maximum, down to its minimum, back to where it was.
void Sweep::sweepSlider(Series& s) {
    QSlider* sl = panel_->slider(s.control);
    if (!sl || !sl->isEnabled() || sl->maximum() == sl->minimum())
        return;
    const int start = sl->value();
    stepToward(s, sl, +1, sl->maximum());
    stepToward(s, sl, -1, sl->minimum());
    stepToward(s, sl, +1, start);
}

void Sweep::sweepCombo(Series& s) {
    auto* combo = panel_->findChild<QComboBox*>(QLatin1String(s.combo));
    const int n = combo ? combo->count() : 0;
    for (int i = 0; i < n && n > 1 && !full(); ++i)
        stepOnce(s, +1); // wraps: n steps come back to the start
}

void Sweep::report(const QString& loadBefore, const EventCounter& counter) const {
    std::vector<double> all;
    all.reserve(steps_.size());
    for (const Step& s : steps_)
        all.push_back(s.ms);
    std::printf("bench-ui: %zu slider steps and %zu model switches across %d models, window "
                "%dx%d, platform %s, load average %s before, %s after\n",
                steps_.size(), switches_.size(), models_, w_.width(), w_.height(),
                qPrintable(QGuiApplication::platformName()), qPrintable(loadBefore),
                qPrintable(loadAverage()));
    for (const Series& s : series_)
        if (!s.ms.empty())
            std::printf("  %-8s %5zu steps  p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms\n", s.name,
                        s.ms.size(), percentile(s.ms, 0.5), percentile(s.ms, 0.99),
                        percentile(s.ms, 1.0));
    std::printf("model switch %zu  p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", switches_.size(),
                percentile(switches_, 0.5), percentile(switches_, 0.99),
                percentile(switches_, 1.0));
    std::vector<Step> worst = steps_;
    std::sort(worst.begin(), worst.end(), [](const Step& a, const Step& b) { return a.ms > b.ms; });
    for (std::size_t i = 0; i < std::min<std::size_t>(5, worst.size()); ++i)
        std::printf("  slowest: %6.2f ms  %s\n", worst[i].ms, worst[i].where.c_str());
    for (const char* name : {"roofline", "capacity", "intensity"})
        if (auto* plot = qobject_cast<QCustomPlot*>(w_.viewWidget(QLatin1String(name))))
            std::printf("%s replot average %.2f ms\n", name, plot->replotTime(true));
    for (const auto* m : {&counter.layouts, &counter.paints, &counter.resizes})
        for (const auto& [name, n] : *m)
            if (n >= static_cast<int>(steps_.size()) / 4)
                std::printf("  %s %d: %s\n",
                            m == &counter.layouts  ? "layout"
                            : m == &counter.paints ? "paint"
                                                   : "resize",
                            n, name.c_str());
    // The GUI thread's own CPU time: what other processes on a shared machine do not inflate
    // (wall-clock includes the time the scheduler gave them).
    std::printf("update cpu p50 %.2f ms p99 %.2f ms (GUI thread CPU time)\n", percentile(cpu_, 0.5),
                percentile(cpu_, 0.99));
    std::printf("update p50 %.2f ms p99 %.2f ms\n", percentile(all, 0.5), percentile(all, 0.99));
}

// Every preset, or only the --model one (profiling one model's drags).
std::vector<std::string> sweptModels(const StartupOptions& o) {
    std::vector<std::string> ids;
    const auto model = std::find_if(o.state.begin(), o.state.end(),
                                    [](const auto& t) { return t.first->key == "model"; });
    if (model != o.state.end())
        ids.push_back(model->second);
    else
        for (const auto& preset : modelPresets())
            ids.push_back(preset.id);
    return ids;
}

} // namespace

int runBenchSweep(const StartupOptions& o) {
    bool capped = false;
    for (const QString& a : QCoreApplication::arguments())
        capped = capped || a == QLatin1String("--steps") || a.startsWith(QLatin1String("--steps="));

    MainWindow w(MainWindow::Options{false, false});
    if (!applyStartupOrReport(w, o))
        return 2;
    w.show();
    for (int i = 0; i < 3; ++i)
        QApplication::processEvents();
    w.renderNow();
    QApplication::processEvents();
    const QString loadBefore = loadAverage();

    EventCounter counter;
    if (qEnvironmentVariableIsSet("KVSCOPE_BENCH_TRACE"))
        QApplication::instance()->installEventFilter(&counter);
    w.setDragging(true); // a speaker drags: plots replot without antialiasing until release
    Sweep sweep(w, capped ? o.benchSteps : -1);
    for (const std::string& id : sweptModels(o)) {
        if (sweep.full())
            break;
        sweep.sweepModel(id);
    }
    sweep.report(loadBefore, counter);
    return 0;
}

} // namespace kvscope::ui
