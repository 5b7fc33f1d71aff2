// Capacity vs TP and intensity vs TP for the current model and its MLA (or GQA) counterpart:
// GQA's capacity rises until its KV heads replicate, MLA's stays flat; MLA's intensity falls as
// 1/TP while GQA's stays flat until replication.
#pragma once

#include "ui/plotwidget.h"
#include "ui/viewmodel.h"

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

    Kind kind_;
    Metric metric_ = Metric::Tokens;
    TpData data_;
    bool hasData_ = false;
    QCPTextElement* title_ = nullptr;
};

} // namespace kvscope::ui
