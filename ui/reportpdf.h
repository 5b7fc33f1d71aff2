// A PDF report of the window's configuration: the state, the strips, the roofline and capacity
// plots on the first page, then every number of the report's field list by section
// (QPdfWriter + QPainter).
#pragma once

#include "core/law/law.h"

#include <QString>
#include <QStringList>
#include <vector>

namespace kvscope::ui {

class MainWindow;

bool writeReportPdf(MainWindow& w, const QString& path, QString* error = nullptr);

/// One line of the PDF's number pages: a section heading (value empty, heading true) or a
/// label with its value as the field list formats it.
struct PdfRow {
    QString label;
    QString value;
    QString key; ///< the field's JSON key; empty for headings
    bool heading = false;
};
/// The rows the PDF prints, in order (core/features/report_fields.h, every row).
std::vector<PdfRow> reportPdfRows(const kvscope::ModelSpec& m, const kvscope::GpuSpec& gpu,
                                  const kvscope::Report& r);

} // namespace kvscope::ui
