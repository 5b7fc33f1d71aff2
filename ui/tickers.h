// Axis tickers that speak units: SI-suffixed logarithmic ticks ("10 T", "1 k"), powers of two
// for TP, and the bytes ruler ticks the strips view uses.
#pragma once

#include "ui/qcp.h"

#include <QString>

namespace kvscope::ui {

/// 1 → "1", 1500 → "1.5 k", 2e14 → "200 T" (decimal SI, as FLOP/s and token counts read).
QString siLabel(double v);

/// Logarithmic ticks (decades) labelled with SI suffixes and an optional unit ("FLOP/s").
class SiLogTicker : public QCPAxisTickerLog {
public:
    explicit SiLogTicker(QString unit = {}) : unit_(std::move(unit)) {}

protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar,
                         int precision) override;

private:
    QString unit_;
};

/// Ticks at powers of two (TP sizes) on a logarithmic axis.
class Pow2Ticker : public QCPAxisTicker {
public:
    Pow2Ticker() = default;

protected:
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override;
    int getSubTickCount(double tickStep) override;
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar,
                         int precision) override;
};

/// A "nice" round byte count at or above `bytes` (1, 2, 2.5, 5 × 1024^k) for rulers.
double niceBytesCeil(double bytes);

} // namespace kvscope::ui
