#include "ui/tickers.h"

#include <array>
#include <cmath>

namespace kvscope::ui {

QString siLabel(double v) {
    static const std::array<const char*, 7> suffix = {"", " k", " M", " G", " T", " P", " E"};
    if (v == 0)
        return QStringLiteral("0");
    if (std::abs(v) < 1) {
        QString s = QString::number(v, 'g', 2);
        return s;
    }
    int k = 0;
    double x = v;
    while (std::abs(x) >= 1000 && k + 1 < static_cast<int>(suffix.size())) {
        x /= 1000;
        ++k;
    }
    const double rounded = std::round(x * 10) / 10;
    QString num = (std::abs(rounded - std::round(rounded)) < 1e-9)
                      ? QString::number(static_cast<long long>(std::llround(rounded)))
                      : QString::number(rounded, 'f', 1);
    return num + QLatin1String(suffix[static_cast<std::size_t>(k)]);
}

QString SiLogTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
    const QString l = siLabel(tick);
    return unit_.isEmpty() ? l : l + QLatin1Char(' ') + unit_;
}

QVector<double> Pow2Ticker::createTickVector(double, const QCPRange& range) {
    QVector<double> ticks;
    for (double t = 1; t <= range.upper * 1.0001; t *= 2)
        if (t >= range.lower * 0.9999)
            ticks.append(t);
    return ticks;
}

int Pow2Ticker::getSubTickCount(double) {
    return 0;
}

QString Pow2Ticker::getTickLabel(double tick, const QLocale&, QChar, int) {
    return QString::number(static_cast<long long>(std::llround(tick)));
}

double niceBytesCeil(double bytes) {
    if (bytes <= 0)
        return 1024;
    double unit = 1;
    while (bytes > unit * 1024)
        unit *= 1024;
    for (double m :
         {1.0, 2.0, 2.5, 5.0, 10.0, 20.0, 25.0, 50.0, 100.0, 200.0, 250.0, 500.0, 1024.0})
        if (bytes <= unit * m * 1.0000001)
            return unit * m;
    return unit * 1024;
}

} // namespace kvscope::ui
