// "Decode step": the whole step's time per output token (or tokens/s per GPU) against batch for
// every KV layout of the model (MHA, each GQA, MQA, and the latent for MLA models) at the
// current context and TP, with the current variant's KV share of the step's bytes and the batch
// where it reaches 10% — past that point halving KV again buys at most 5%. A second mode stacks
// the current variant's step bytes (weights, KV, activations) per batch. Every number comes from
// core (computeDecodeStep through stepSweep / batchAtKvFraction). A measurement file with
// whole-step points (`kvscope-cli measure --step`, Tools → Measure on a CPU) adds them as
// points: the measured time of a few layers scaled to the model's layer count, labelled so.
#pragma once

#include "gpu/step.h"
#include "ui/appstate.h"
#include "ui/plotwidget.h"

#include <QPointer>
#include <optional>
#include <utility>
#include <vector>

namespace kvscope::ui {

class StepPlot : public PlotWidget {
    Q_OBJECT
public:
    enum class Mode { Time, Throughput, Bytes };

    explicit StepPlot(QWidget* parent = nullptr);

    /// Re-evaluates the step over the batch grid when the state moved. Off screen (behind
    /// another tab) the state is kept and applied when the plot comes on screen or is read: a
    /// slider step does not rebuild a plot nobody sees.
    void setState(const AppState& s, const kvscope::Report& current);
    /// Whether the plot is on screen (its dock's QDockWidget::visibilityChanged: a tabified
    /// dock behind another tab stays isVisible()).
    void setOnScreen(bool on);
    /// Applies a state kept while hidden (exports and the accessors below call it).
    void flushPending() const;
    void setMode(Mode m);
    Mode mode() const { return mode_; }
    /// Measured steps to overlay (empty: none), from `device`; points of another model
    /// (different hidden size or layer count) are not drawn.
    void setMeasuredSteps(const std::vector<gpu::StepMeasurement>& steps,
                          const std::string& device);
    /// The overlay as drawn: batch, ms per output token (scaled to the model's layers).
    struct MeasuredStepPoint {
        std::int64_t batch = 0;
        double msPerToken = 0;
        double tokensPerSPerGpu = 0;
        QString tooltip;
    };
    const std::vector<MeasuredStepPoint>& measuredStepPoints() const {
        flushPending();
        return measured_;
    }

    // What the plot shows (for tests and tooltips).
    const std::vector<kvscope::StepSweepRow>& rows() const {
        flushPending();
        return rows_;
    }
    std::optional<std::int64_t> tenPercentBatch() const {
        flushPending();
        return tenPercent_;
    }
    std::int64_t currentKvHeads() const {
        flushPending();
        return currentKv_;
    } ///< 0 = the latent

protected:
    void rebuild() override;
    void mouseMoveEvent(QMouseEvent* e) override;

private:
    void applyState(const AppState& s, const kvscope::Report& current);
    double valueOf(const kvscope::DecodeStep& s) const;
    /// The current variant's rows (with a step), in batch order.
    std::vector<const kvscope::StepSweepRow*> currentRows() const;
    /// rebuild's parts; each label they return is placed last, in order of importance.
    Floating shadePastPool(double maxBatch, double yLo, double yHi);
    void addBars();
    bool addCurves(); ///< false when no point has a value
    Floating addTenPercent(double maxBatch);
    Floating addCurrent(double maxBatch);

    mutable std::optional<std::pair<AppState, kvscope::Report>> pending_;
    bool onScreen_ = true;
    Mode mode_ = Mode::Time;
    std::vector<kvscope::StepSweepRow> rows_;
    std::optional<std::int64_t> tenPercent_;
    std::int64_t currentKv_ = 0;
    std::int64_t currentBatch_ = 1;
    std::int64_t maxConcurrency_ = 0; ///< of the current variant: batches past it do not fit
    std::string rowsKey_;             ///< what rows_ were computed for (rowsKey)
    std::vector<std::int64_t> grid_;  ///< and at which batches
    std::vector<gpu::StepMeasurement> steps_;
    std::string stepDevice_;
    std::vector<MeasuredStepPoint> measured_; ///< steps_ of the current model
    std::int64_t modelHidden_ = 0, modelLayers_ = 0;
    void collectMeasured();
    QCPTextElement* title_ = nullptr;
    QString titleText_;
    QPointer<QCPItemText> poolLabel_;
    /// Hides the pool's label where it finds no free spot, and names the band in the title.
    void fitPoolLabel();
    /// The legend's columns: as many as fit the plot's width, so no name is cut short.
    void fitLegendColumns();
};

} // namespace kvscope::ui
