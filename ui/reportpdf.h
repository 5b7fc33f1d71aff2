// A one-page PDF report of the window's configuration: the state, the strips, the roofline and
// capacity plots, and every number core reports (QPdfWriter + QPainter).
#pragma once

#include <QString>

namespace kvscope::ui {

class MainWindow;

bool writeReportPdf(MainWindow& w, const QString& path, QString* error = nullptr);

} // namespace kvscope::ui
