#include "ui/measure.h"

#include "core/format.h"
#include "gpu/measure_table.h"
#include "gpu/measureplan.h"
#include "ui/mainwindow.h"
#include "ui/rooflineplot.h"
#include "ui/stepplot.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QThread>
#include <algorithm>

namespace kvscope::ui {

namespace {
QString q(const std::string& s) {
    return QString::fromStdString(s);
}

gpu::KvDtype setDtype(const gpu::MeasurementSet& set) {
    return set.points.empty() ? gpu::KvDtype::Bf16 : set.points.front().shape.dtype;
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
        gpu::MeasurementSet set;
        set.backend = job.backend;
        set.model = job.model;
        std::string why;
        auto backend = gpu::makeBackend(job.backend, &why);
        if (!backend) {
            post([this, generation, set, why] { onDone(generation, set, false, q(why)); });
            return;
        }
        const auto devices = backend->devices();
        set.device = devices.empty() ? job.backend : devices.front().name;
        const double steps =
            static_cast<double>(job.shapes.size() + job.steps.size() + (job.ceilings ? 1 : 0) +
                                (job.steps.empty() ? 0 : 1));
        double done = 0;
        int lastPermille = -1;
        auto hook = [&](double f, const std::string& what) {
            if (run->cancel)
                return false;
            const int permille = static_cast<int>(1000.0 * (done + f) / std::max(1.0, steps));
            if (permille != lastPermille) {
                lastPermille = permille;
                const QString text = q(what);
                post([this, generation, permille, text] {
                    onProgress(generation, permille / 1000.0, text);
                });
            }
            return true;
        };
        if (job.ceilings) {
            set.ceilings = backend->measureCeilings(hook);
            if (run->cancel || !set.ceilings.ok) {
                const QString msg = run->cancel
                                        ? QStringLiteral("cancelled")
                                        : QStringLiteral("ceilings: ") + q(set.ceilings.error);
                post([this, generation, set, msg] { onDone(generation, set, false, msg); });
                return;
            }
            done += 1;
        }
        int failures = 0;
        std::string firstError;
        for (std::size_t i = 0; i < job.shapes.size(); ++i) {
            const std::string skip = backend->supports(job.shapes[i]);
            if (!skip.empty()) {
                done += 1;
                continue;
            }
            gpu::Measurement m = backend->measure(job.shapes[i], hook);
            if (run->cancel) {
                post([this, generation, set] {
                    onDone(generation, set, false, QStringLiteral("cancelled"));
                });
                return;
            }
            m.variant = i < job.variants.size() ? job.variants[i] : std::string();
            if (m.ok)
                set.points.push_back(m);
            else if (++failures == 1)
                firstError = m.variant + ": " + m.error;
            done += 1;
        }
        if (!job.steps.empty()) {
            auto stepBackend = gpu::makeStepBackend(job.backend, &why);
            if (stepBackend) {
                // The step backend's own ceilings: its spot re-measurements need them.
                if (stepBackend->measureCeilings(hook).ok) {
                    done += 1;
                    for (const gpu::StepShape& s : job.steps) {
                        gpu::StepMeasurement m = stepBackend->measureStep(s, hook);
                        if (run->cancel) {
                            post([this, generation, set] {
                                onDone(generation, set, false, QStringLiteral("cancelled"));
                            });
                            return;
                        }
                        if (m.ok)
                            set.steps.push_back(m);
                        else if (++failures == 1)
                            firstError = "step " + gpu::describe(s) + ": " + m.error;
                        done += 1;
                    }
                }
            } else if (++failures == 1) {
                firstError = why;
            }
        }
        const bool ok = failures == 0;
        const QString msg = ok ? QStringLiteral("%1 points measured on %2")
                                     .arg(set.points.size() + set.steps.size())
                                     .arg(q(set.device))
                               : QStringLiteral("%1 of %2 shapes failed; first: %3")
                                     .arg(failures)
                                     .arg(job.shapes.size())
                                     .arg(q(firstError));
        post([this, generation, set, ok, msg] { onDone(generation, set, ok, msg); });
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
