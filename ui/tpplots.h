// Capacity vs TP and intensity vs TP for the current model and its MLA (or GQA) counterpart:
// GQA's capacity rises until its KV heads replicate, MLA's stays flat; MLA's intensity falls as
// 1/TP while GQA's stays flat until replication.
#pragma once

#include "ui/plotwidget.h"
#include "ui/viewmodel.h"

#include <optional>

namespace kvscope::ui {

class TpPlot : public PlotWidget {
    Q_OBJECT
public:
    enum class Kind { Capacity, Intensity };
    enum class Metric { Tokens, Concurrency };

    explicit TpPlot(Kind kind, QWidget* parent = nullptr);

    void setData(const TpData& data);
    void setMetric(Metric m);
    Metric metric() const { return metric_; }
    Kind kind() const { return kind_; }

protected:
    void rebuild() override;
    void mouseMoveEvent(QMouseEvent* e) override;

private:
    double valueOf(const TpPoint& p) const;
    std::vector<double> shown(const TpData& d) const;
    /// rebuild's parts, in drawing order; each label they return is placed last, in order of
    /// importance.
    void styleTitle(); ///< the title and the value axis' label, for the kind and metric
    /// The axes' ranges around every point (and the ridge); the largest TP, or none when no
    /// point has a value.
    std::optional<double> fitRanges();
    Floating shadeReplication(double maxTp);
    void addSeries(const TpSeries& s, const QColor& c, bool dashed);
    void addCurves();
    Floating addRidge();
    Floating addCurrentTp();
    Floating addCrossover();

    Kind kind_;
    Metric metric_ = Metric::Tokens;
    TpData data_;
    bool hasData_ = false;
    QCPTextElement* title_ = nullptr;
};

} // namespace kvscope::ui
