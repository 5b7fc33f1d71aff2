// A Report's numbers as a flat, named list, and that list as CSV, JSON and Markdown (for
// `--csv`/`--markdown`, the GUI's Export menu and the clipboard).
#pragma once

#include "core/law/law.h"

#include <optional>
#include <string>
#include <vector>

namespace kvscope {

/// One exported number. `key` is stable (snake_case, unit in the name where it has one) and is
/// what story files quote in `key_numbers[].field`.
struct ReportNumber {
    std::string key;   ///< "cell_bytes_per_token_per_rank"
    std::string label; ///< "KV cell per token per rank"
    std::string unit;  ///< "B", "tokens", "requests", "FLOP/byte", "" for plain counts
    double value = 0;
    bool integer = true; ///< print without decimals
};

/// Every number of a report, in the order a reader meets them (geometry, cell, pool, capacity,
/// vLLM paging, roofline, weights, decode step). Includes
/// `kv_proj_weight_bytes_vs_checkpoint`: (K/V projection params of the evaluated h_kv − the
/// checkpoint's) × L × weight bytes per element — what an h_kv what-if adds to the weights.
std::vector<ReportNumber> reportNumbers(const Report& r);

/// The number named `key`, or nullopt.
std::optional<double> reportNumber(const Report& r, const std::string& key);

/// "key,label,value,unit" rows under a header line; values unrounded.
std::string reportCsv(const Report& r);
/// A two-column Markdown table (Quantity | Value) with human units.
std::string reportMarkdown(const ModelSpec& m, const GpuSpec& gpu, const Report& r);
/// The same object `kvscope-cli size --json` prints (format.h's jsonReport).
std::string reportJson(const ModelSpec& m, const GpuSpec& gpu, const Report& r);

/// A number as its ReportNumber would print it in CSV ("40960", "0.0270889").
std::string formatNumberPlain(const ReportNumber& n);
/// A number with a human unit ("40 KiB", "1,327,148 tokens", "8.00 FLOP/byte", "2.71 %").
std::string formatNumberHuman(const ReportNumber& n);

/// Quotes a CSV field when it holds a comma, quote or newline.
std::string csvField(const std::string& s);
/// Escapes '|' for a Markdown table cell.
std::string markdownCell(const std::string& s);

} // namespace kvscope
