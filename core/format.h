// Human-readable units and the report renderings shared by the CLI and the GUI.
#pragma once

#include "core/law/law.h"

#include <cstdint>
#include <string>

namespace kvscope {

/// Binary units for bytes: "320 KiB", "2.5 MiB", "50.6 GiB", "40,960 B" below 1 KiB.
std::string humanBytes(double bytes);
/// Thousands separators: 1327148 → "1,327,148".
std::string withCommas(std::int64_t n);
/// "989.4 TFLOP/s", "3.35 TB/s" (decimal, as datasheets print them).
std::string humanFlops(double flopPerS);
std::string humanBandwidth(double bytesPerS);
/// Parameter counts: "70.55B", "134.2M".
std::string humanCount(double n);
/// "%.*f" without locale surprises.
std::string fixed(double v, int decimals);
/// fixed() with trailing zeros (and a trailing point) dropped: "4.70" -> "4.7", "8.00" -> "8".
std::string fixedTrimmed(double v, int decimals);

/// The readable `kvscope-cli size` report (multi-line, provenance included).
std::string textReport(const ModelSpec& m, const GpuSpec& gpu, const Report& r);
/// The `--json` object (bytes and counts as integers, nothing rounded), serialised.
std::string jsonReport(const ModelSpec& m, const GpuSpec& gpu, const Report& r);

} // namespace kvscope
