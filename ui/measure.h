// The Measure action: runs decode-attention shapes on a measurement backend (CPU, or CUDA
// where present) on a worker thread, with progress and cancel, the window staying live; the
// newest request wins. Results reach the roofline as measured points and dashed ceilings, and
// save to / load from the measurement JSON (`kvscope-cli measure --json`), so a laptop can show
// what a GPU server measured.
#pragma once

#include "gpu/measurement_json.h"
#include "ui/measurements.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

class QThread;
class QProgressBar;
class QPushButton;
class QLabel;
class QWidget;

namespace kvscope::ui {

class MainWindow;

/// What one sweep runs.
struct MeasureJob {
    std::string backend = "cpu"; ///< "cpu" or "cuda"
    std::string model;           ///< recorded in the measurement file
    std::vector<gpu::DecodeShape> shapes;
    std::vector<std::string> variants; ///< a label per shape ("GQA-8")
    bool ceilings = true;              ///< measure read bandwidth and peak first
    /// Whole decode steps of a scaled layer stack, run after the kernel sweep (CPU only).
    std::vector<gpu::StepShape> steps;
};

/// The measured layer as the roofline takes it (points with tooltips, ceilings for `dtype`).
QVector<MeasuredPoint> measuredPoints(const gpu::MeasurementSet& set);
MeasuredCeilings measuredCeilings(const gpu::MeasurementSet& set);

class MeasureController : public QObject {
    Q_OBJECT
public:
    explicit MeasureController(MainWindow& w);
    ~MeasureController() override;

    /// The sweep for the window's current model at its TP: every variant at 8,192 tokens,
    /// batch 1 on a CPU and 16 on CUDA. CUDA when it is present.
    MeasureJob jobForCurrentState() const;
    /// Starts `job` on a worker thread; a running sweep is cancelled (its results dropped).
    void start(const MeasureJob& job);
    void cancel();
    bool running() const { return running_; }

    bool hasResults() const {
        return !set_.points.empty() || !set_.steps.empty() || set_.ceilings.ok;
    }
    const gpu::MeasurementSet& results() const { return set_; }
    /// Shows `set` on the roofline and its steps on the step plot (replacing what was there).
    void setResults(const gpu::MeasurementSet& set);
    bool loadJson(const QString& path, QString* error);
    bool saveJson(const QString& path, QString* error) const;

    /// The status-bar strip: progress bar and Cancel button (hidden when idle).
    QWidget* progressWidget() const { return strip_; }
    QProgressBar* progressBar() const { return bar_; }

Q_SIGNALS:
    void progress(double fraction, const QString& what);
    /// After a sweep: `ok` false when it failed or was cancelled; `message` says so.
    void finished(bool ok, const QString& message);

private:
    struct Run {
        std::atomic<bool> cancel{false};
    };
    void onProgress(quint64 generation, double fraction, const QString& what);
    void onDone(quint64 generation, const gpu::MeasurementSet& set, bool ok,
                const QString& message);

    MainWindow& w_;
    gpu::MeasurementSet set_;
    quint64 generation_ = 0;
    bool running_ = false;
    std::shared_ptr<Run> run_;
    std::vector<QPointer<QThread>> threads_;
    QWidget* strip_ = nullptr;
    QProgressBar* bar_ = nullptr;
    QLabel* label_ = nullptr;
    QPushButton* cancelButton_ = nullptr;
};

} // namespace kvscope::ui
