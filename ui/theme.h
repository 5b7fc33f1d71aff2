// Colours and fonts shared by every view: a light and a dark palette, one colour-blind-safe
// colour per TP rank (Okabe-Ito), and the type sizes that read from the back of a lecture hall.
#pragma once

#include <QColor>
#include <QFont>
#include <QString>

class QApplication;
class QWidget;

namespace kvscope::ui {

enum class ThemeMode { Light, Dark };

/// Applies the Fusion style and a light or dark palette to the whole application.
void applyTheme(ThemeMode mode);
ThemeMode currentTheme();
QString toString(ThemeMode mode);

/// True when a widget's palette is dark (views use it to pick their own colours).
bool isDark(const QWidget* w);

/// The colour of TP rank `rank` (Okabe-Ito, cycling with a lighter tone past 8 ranks).
QColor rankColor(int rank, bool dark);
/// Colours of the model variants on the plots.
QColor seriesColor(int index, bool dark);
QColor accentColor(bool dark);  ///< the current configuration
QColor warningColor(bool dark); ///< replicated heads, banners
QColor errorColor(bool dark);
QColor mutedText(const QWidget* w);

/// A font `points` larger than the application font, optionally bold.
QFont scaledFont(const QFont& base, double factor, bool bold = false);

} // namespace kvscope::ui
