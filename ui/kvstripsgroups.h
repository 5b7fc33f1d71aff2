// How a strip's bytes split by what they do as the context grows, for models whose layer
// groups differ (Gemma's sliding windows, Nemotron-H's Mamba state, Qwen3.5's DeltaNet): the
// part that grows with S (full attention, MLA), the part capped at a window (sliding and
// chunked layers) and the fixed per-request state (Mamba, linear attention, cross-attention).
// The shares come from the core's per-group request bytes (Report::groupRequestBytesPerRank);
// the strips view paints each strip as up to three segments and a legend names them.
#pragma once

#include "core/law/law.h"

#include <QColor>
#include <QRectF>
#include <QString>
#include <QStringList>

class QPainter;
class QFont;

namespace kvscope::ui::strips {

/// Fractions of one request's bytes on a rank; they add up to 1 (all 0 without group data).
struct GroupShares {
    double growing = 0, capped = 0, fixed = 0;
    /// More than the part that grows: the strip is drawn in segments, with a legend.
    bool split() const { return capped > 0 || fixed > 0; }
};

GroupShares groupShares(const Report& r);

/// The legend's entries, in the strip's order from its cap down ("fixed state", "capped at
/// the window", "grows with S"), only those the model has; empty when nothing is split.
QStringList groupLegendEntries(const Report& r);

/// One strip body in segments from the cap down: fixed state (dotted), capped (light), the
/// part that grows with S (solid) at the tip, so a longer context lengthens the solid end.
void paintGroupedBody(QPainter& p, const QRectF& body, const QColor& c, double alpha, bool dark,
                      const GroupShares& s);

/// The legend's swatches and names in a row ending at `right`, centred on `y`; returns its
/// width (0 when nothing is split). `measureOnly` returns the width without painting.
double paintGroupLegend(QPainter& p, const Report& r, const QFont& font, const QColor& ink,
                        bool dark, double right, double y, bool measureOnly = false);

/// The tooltip's line for a strip of `stripBytes`: what of it grows, is capped, is fixed.
QString groupTipLine(const Report& r, double stripBytes);

} // namespace kvscope::ui::strips
