// What the measurement backends hand the roofline: measured decode steps and the machine's
// measured ceilings. Plain values; the measurement issue fills them.
#pragma once

#include <QString>
#include <QVector>

namespace kvscope::ui {

struct MeasuredPoint {
    QString variant;                 ///< "GQA-8"
    double intensityFlopPerByte = 0; ///< counted FLOPs / counted bytes (docs/formulas.md §8)
    double achievedFlopPerS = 0;
    QString tooltip; ///< shown on hover (time, bytes/s, % of ceiling, ...)
};

struct MeasuredCeilings {
    double readBytesPerS = 0; ///< measured streaming-read bandwidth; 0 = not measured
    double peakFlopPerS = 0;  ///< measured peak; 0 = not measured
};

} // namespace kvscope::ui
