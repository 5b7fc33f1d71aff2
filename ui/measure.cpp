#include "ui/measure.h"

#include "core/format.h"
#include "gpu/measure_table.h"
#include "gpu/measureplan.h"
#include "ui/mainwindow.h"
#include "ui/qstrings.h"
#include "ui/rooflineplot.h"
#include "ui/stepplot.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QThread>
#include <algorithm>
#include <functional>

namespace kvscope::ui {

namespace {
gpu::KvDtype setDtype(const gpu::MeasurementSet& set) {
    return set.points.empty() ? gpu::KvDtype::Bf16 : set.points.front().shape.dtype;
}

/// What a sweep hands back to the GUI thread: the set as far as it got, whether every shape
/// ran, and the banner's line.
struct SweepOutcome {
    gpu::MeasurementSet set;
    bool ok = false;
    QString message;
};

/// One sweep, on the worker thread: the ceilings, the kernel shapes, then the decode steps.
/// `report` gets the progress in permille each time that changes; `cancel` stops the sweep at
/// the backend's next progress call.
class SweepRun {
public:
    using Report = std::function<void(int permille, const QString& what)>;
    SweepRun(const MeasureJob& job, const std::atomic<bool>& cancel, Report report)
        : job_(job), cancel_(cancel), report_(std::move(report)),
          steps_(static_cast<double>(job.shapes.size() + job.steps.size() + (job.ceilings ? 1 : 0) +
                                     (job.steps.empty() ? 0 : 1))) {}

    SweepOutcome run();

private:
    bool hook(double f, const std::string& what);
    /// Each is false when the sweep was cancelled in it.
    bool measureShapes(gpu::Backend& backend);
    bool measureSteps();
    SweepOutcome stopped(const QString& why) const { return {set_, false, why}; }

    const MeasureJob& job_;
    const std::atomic<bool>& cancel_;
    Report report_;
    const gpu::Progress progress_ = [this](double f, const std::string& what) {
        return hook(f, what);
    };
    const double steps_; ///< the hook's whole: a shape, a step or a ceilings run each count 1
    double done_ = 0;
    int lastPermille_ = -1;
    gpu::MeasurementSet set_;
    int failures_ = 0;
    std::string firstError_;
};

bool SweepRun::hook(double f, const std::string& what) {
    if (cancel_)
        return false;
    const int permille = static_cast<int>(1000.0 * (done_ + f) / std::max(1.0, steps_));
    if (permille != lastPermille_) {
        lastPermille_ = permille;
        report_(permille, q(what));
    }
    return true;
}

SweepOutcome SweepRun::run() {
    set_.backend = job_.backend;
    set_.model = job_.model;
    std::string why;
    auto backend = gpu::makeBackend(job_.backend, &why);
    if (!backend)
        return stopped(q(why));
    const auto devices = backend->devices();
    set_.device = devices.empty() ? job_.backend : devices.front().name;
    if (job_.ceilings) {
        set_.ceilings = backend->measureCeilings(progress_);
        if (cancel_ || !set_.ceilings.ok)
            return stopped(cancel_ ? QStringLiteral("cancelled")
                                   : QStringLiteral("ceilings: ") + q(set_.ceilings.error));
        done_ += 1;
    }
    if (!measureShapes(*backend) || !measureSteps())
        return stopped(QStringLiteral("cancelled"));
    const bool ok = failures_ == 0;
    const QString msg = ok ? QStringLiteral("%1 points measured on %2")
                                 .arg(set_.points.size() + set_.steps.size())
                                 .arg(q(set_.device))
                           : QStringLiteral("%1 of %2 shapes failed; first: %3")
                                 .arg(failures_)
                                 .arg(job_.shapes.size())
                                 .arg(q(firstError_));
    return {set_, ok, msg};
}

bool SweepRun::measureShapes(gpu::Backend& backend) {
    for (std::size_t i = 0; i < job_.shapes.size(); ++i) {
        const std::string skip = backend.supports(job_.shapes[i]);
        if (!skip.empty()) {
            done_ += 1;
            continue;
        }
        gpu::Measurement m = backend.measure(job_.shapes[i], progress_);
        if (cancel_)
            return false;
        m.variant = i < job_.variants.size() ? job_.variants[i] : std::string();
        if (m.ok)
            set_.points.push_back(m);
        else if (++failures_ == 1)
            firstError_ = m.variant + ": " + m.error;
        done_ += 1;
    }
    return true;
}

bool SweepRun::measureSteps() {
    if (job_.steps.empty())
        return true;
    std::string why;
    auto stepBackend = gpu::makeStepBackend(job_.backend, &why);
    if (!stepBackend) {
        if (++failures_ == 1)
            firstError_ = why;
        return true;
    }
    // The step backend's own ceilings: its spot re-measurements need them.
    if (!stepBackend->measureCeilings(progress_).ok)
        return true;
    done_ += 1;
    for (const gpu::StepShape& s : job_.steps) {
        gpu::StepMeasurement m = stepBackend->measureStep(s, progress_);
        if (cancel_)
            return false;
        if (m.ok)
            set_.steps.push_back(m);
        else if (++failures_ == 1)
            firstError_ = "step " + gpu::describe(s) + ": " + m.error;
        done_ += 1;
    }
    return true;
}
} // namespace

QVector<MeasuredPoint> measuredPoints(const gpu::MeasurementSet& set) {
    QVector<MeasuredPoint> out;
    const double bw = set.ceilings.readBytesPerSecond;
    for (const auto& m : set.points) {
        if (!m.ok || m.flopPerSecond <= 0 || m.intensityFlopPerByte <= 0)
            continue;
        MeasuredPoint p;
        p.variant = q(m.variant.empty() ? gpu::describe(m.shape) : m.variant);
        p.intensityFlopPerByte = m.intensityFlopPerByte;
        p.achievedFlopPerS = m.flopPerSecond;
        QString tip =
            QStringLiteral("<b>%1</b> measured on %2 (%3)<br>%4<br>time %5 µs, "
                           "median of %6<br>read %7")
                .arg(p.variant, q(set.device.empty() ? set.backend : set.device), q(m.kernel),
                     q(gpu::describe(m.shape)), q(fixed(m.medianSeconds * 1e6, 1)),
                     QString::number(m.repeats), q(humanBandwidth(m.bytesPerSecond)));
        // The table's figures (gpu/measure_table.h): the point against its own ceilings (the
        // read ceiling paired with its repeats), else the set's.
        const gpu::RoofPlacement r = gpu::placePoint(m, set.ceilings);
        const double ceiling = m.readCeiling() > 0 ? m.readCeiling() : bw;
        if (ceiling > 0)
            tip += QStringLiteral(" (%1 % of the read ceiling, %2%3)")
                       .arg(q(fixed(100.0 * r.fractionRead, 0)), q(humanBandwidth(ceiling)),
                            m.readCeilingPaired > 0 ? QStringLiteral(", paired with the repeats")
                                                    : QString());
        tip += QStringLiteral("<br>achieved %1 at %2 FLOP/byte")
                   .arg(q(humanFlops(m.flopPerSecond)), q(fixed(m.intensityFlopPerByte, 2)));
        if (r.roof > 0)
            tip += QStringLiteral(": %1 % of the roof (%2-bound)")
                       .arg(q(fixed(100.0 * r.fractionRoof, 0)),
                            r.computeBound ? QStringLiteral("compute") : QStringLiteral("memory"));
        if (r.aboveCeiling)
            tip += QStringLiteral("<br><b>above its ceiling</b>: a bug in the ceilings or counts");
        if (m.unstable)
            tip += QStringLiteral("<br>unstable: the repeats spread too wide; rerun when quiet");
        tip += QStringLiteral("<br>max rel. error %1").arg(QString::number(m.maxRelError, 'e', 1));
        p.tooltip = tip;
        out.push_back(p);
    }
    return out;
}

MeasuredCeilings measuredCeilings(const gpu::MeasurementSet& set) {
    MeasuredCeilings c;
    if (!set.ceilings.ok && set.ceilings.readBytesPerSecond <= 0)
        return c;
    c.readBytesPerS = set.ceilings.readBytesPerSecond;
    c.peakFlopPerS = set.ceilings.peakFor(setDtype(set));
    return c;
}

MeasureController::MeasureController(MainWindow& w) : QObject(&w), w_(w) {
    setObjectName(QStringLiteral("kvscopeMeasure"));
    strip_ = new QWidget(&w);
    strip_->setObjectName(QStringLiteral("measureStrip"));
    auto* h = new QHBoxLayout(strip_);
    h->setContentsMargins(0, 0, 0, 0);
    label_ = new QLabel(strip_);
    bar_ = new QProgressBar(strip_);
    bar_->setRange(0, 1000);
    bar_->setMaximumWidth(260);
    bar_->setTextVisible(false);
    cancelButton_ = new QPushButton(tr("Cancel"), strip_);
    connect(cancelButton_, &QPushButton::clicked, this, &MeasureController::cancel);
    h->addWidget(label_);
    h->addWidget(bar_);
    h->addWidget(cancelButton_);
    strip_->hide();
}

MeasureController::~MeasureController() {
    if (run_)
        run_->cancel = true;
    for (auto& t : threads_)
        if (t)
            t->wait();
}

MeasureJob MeasureController::jobForCurrentState() const {
    MeasureJob job;
    std::string why;
    const bool cuda = gpu::cudaCompiledIn() && gpu::makeBackend("cuda", &why) != nullptr;
    job.backend = cuda ? "cuda" : "cpu";
    const auto& st = w_.state();
    job.model = st.modelRef;
    // 8k tokens: long enough that per-call overhead does not hide the bandwidth (a CPU's
    // Llama-3-70B TP 8 sweep: MHA 70% -> 79% of the read ceiling against 2k) and a few seconds
    // per sweep on two cores; a GPU sweep also batches 16 requests, as a server would.
    const std::int64_t context = 8192;
    const std::int64_t batch = cuda ? 16 : 1;
    // The KV dtype the window shows; bf16 where no kernel reads that layout (e.g. nvfp4).
    const gpu::KvDtype dtype =
        kernelKvDtype(st.model, st.deployment.kvDtype).value_or(gpu::KvDtype::Bf16);
    for (const auto& p : variantShapes(st.model, st.deployment.tp, context, batch, dtype)) {
        if (!p.skip.empty())
            continue;
        job.shapes.push_back(p.shape);
        job.variants.push_back(p.variant);
    }
    // A short step sweep on the CPU: 2 layers of the model's shapes at B = 1, 4, 16 and 4,096
    // tokens (about 2 s per point after the stack is filled). Models the stack does not run
    // (MLA, MoE) get none.
    if (!cuda)
        for (std::int64_t b : {1, 4, 16}) {
            const PlannedStep p = planStep(st.model, st.deployment.tp, 4096, b, dtype);
            if (p.skip.empty())
                job.steps.push_back(p.shape);
        }
    return job;
}

void MeasureController::start(const MeasureJob& job) {
    if (run_)
        run_->cancel = true; // the newest request wins
    auto run = std::make_shared<Run>();
    run_ = run;
    const quint64 generation = ++generation_;
    running_ = true;
    strip_->show();
    bar_->setValue(0);
    label_->setText(tr("Measuring on %1…").arg(q(job.backend)));

    QPointer<MeasureController> self(this);
    auto post = [self, generation](auto fn) {
        if (self)
            QMetaObject::invokeMethod(self, fn, Qt::QueuedConnection);
        (void)generation;
    };
    QThread* t = QThread::create([job, run, generation, post, this] {
        SweepRun sweep(job, run->cancel, [&](int permille, const QString& text) {
            post([this, generation, permille, text] {
                onProgress(generation, permille / 1000.0, text);
            });
        });
        const SweepOutcome r = sweep.run();
        post([this, generation, r] { onDone(generation, r.set, r.ok, r.message); });
    });
    t->setObjectName(QStringLiteral("kvscope-measure"));
    connect(t, &QThread::finished, t, &QObject::deleteLater);
    threads_.erase(std::remove_if(threads_.begin(), threads_.end(),
                                  [](const QPointer<QThread>& p) { return p.isNull(); }),
                   threads_.end());
    threads_.push_back(t);
    t->start(QThread::LowPriority);
}

void MeasureController::cancel() {
    if (run_)
        run_->cancel = true;
    if (running_)
        label_->setText(tr("Cancelling…"));
}

void MeasureController::onProgress(quint64 generation, double fraction, const QString& what) {
    if (generation != generation_)
        return;
    bar_->setValue(static_cast<int>(fraction * 1000));
    label_->setText(tr("Measuring: %1").arg(what));
    Q_EMIT progress(fraction, what);
}

void MeasureController::onDone(quint64 generation, const gpu::MeasurementSet& set, bool ok,
                               const QString& message) {
    if (generation != generation_)
        return; // a newer request replaced this one
    running_ = false;
    run_.reset();
    strip_->hide();
    if (!set.points.empty() || !set.steps.empty() || (ok && set.ceilings.ok))
        setResults(set);
    if (!ok)
        w_.showBanner(tr("Measure: %1").arg(message), message != QLatin1String("cancelled"));
    else
        w_.showBanner(tr("Measure: %1").arg(message), false);
    Q_EMIT finished(ok, message);
}

void MeasureController::setResults(const gpu::MeasurementSet& set) {
    set_ = set;
    if (auto* plot = w_.rooflinePlot()) {
        plot->setMeasuredCeilings(measuredCeilings(set_));
        plot->setMeasuredPoints(measuredPoints(set_));
        plot->setMeasuredVisible(true);
    }
    if (auto* plot = w_.stepPlot())
        plot->setMeasuredSteps(set_.steps, set_.device.empty() ? set_.backend : set_.device);
}

bool MeasureController::loadJson(const QString& path, QString* error) {
    gpu::MeasurementSet set;
    std::string err;
    if (!gpu::loadMeasurementJson(path.toStdString(), &set, &err)) {
        if (error)
            *error = q(err);
        return false;
    }
    setResults(set);
    return true;
}

bool MeasureController::saveJson(const QString& path, QString* error) const {
    std::string err;
    if (!gpu::saveMeasurementJson(set_, path.toStdString(), &err)) {
        if (error)
            *error = q(err);
        return false;
    }
    return true;
}

} // namespace kvscope::ui
