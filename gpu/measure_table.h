// The text table `kvscope-cli measure` prints: per point achieved GB/s and FLOP/s, the spread
// of its repeats, % of the read ceiling and % of the roof (min(peak for its dtype, intensity x
// read ceiling)) measured around it, which ceiling bounds it, and a flag for points above
// their ceiling (a bug) or too noisy to trust.
#pragma once

#include "gpu/backend.h"

#include <cstddef>
#include <string>
#include <vector>

namespace kvscope::gpu {

/// One number through a printf format ("%.1f"), for the measurement tables' cells.
std::string fmt(const char* f, double x);
/// `s` padded with spaces to `w` columns: right-aligned, or left-aligned when `right` is false.
std::string pad(std::string s, std::size_t w, bool right = true);

/// The ceilings block above the table: the read-ceiling winner and its family's best, the
/// L2/L3-resident read ceilings, the peak for `dtype` and the kernel that set it.
std::string formatCeilings(const Ceilings& c, KvDtype dtype);
std::string measureTableHeader();
/// One row. `m` is the point (null when it was skipped or failed; `note` says why); its own
/// ceilings are used when it has them, else `global`.
std::string measureTableRow(const std::string& variant, const DecodeShape& shape,
                            const Measurement* m, const std::string& note, const Ceilings& global);
/// The legend and the warnings (points above their ceiling, unstable points).
std::string measureTableFooter(const std::vector<Measurement>& points, const Ceilings& global);

/// The ceilings a point is placed against: its own (measured around it) when present.
RoofPlacement placePoint(const Measurement& m, const Ceilings& global);

} // namespace kvscope::gpu
