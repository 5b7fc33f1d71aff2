// Exporting what the window shows: PNG always; SVG (with Qt Svg) and PDF as vectors where the
// view paints itself (plots, the strips), as the widget's rendering otherwise.
#pragma once

#include <QString>

class QWidget;

namespace kvscope::ui {

/// Saves `w` to `path`, the format chosen by the suffix (.png, .svg, .pdf). `error` says why not.
bool exportWidget(QWidget* w, const QString& path, QString* error = nullptr);
/// The file-dialog filter of the formats this build writes.
QString exportFilter();

} // namespace kvscope::ui
