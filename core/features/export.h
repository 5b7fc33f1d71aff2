// A Report's numbers as a flat, named list, and that list as CSV, JSON and Markdown (for
// `--csv`/`--markdown`, the GUI's Export menu and the clipboard).
#pragma once

#include "core/features/report_fields.h"
#include "core/law/law.h"

#include <optional>
#include <string>
#include <vector>

namespace kvscope {

/// One exported number: a row of the report's field list (report_fields.h) under its flat name.
/// `key` is stable (snake_case, unit in the name where it has one) and is what story files
/// quote in `key_numbers[].field`; `path` is where `size --json` carries the same number.
struct ReportNumber {
    std::string key;   ///< "cell_bytes_per_token_per_rank"
    std::string label; ///< "KV cell per token per rank"
    std::string unit;  ///< "B", "tokens", "requests", "FLOP/byte", "" for plain counts
    double value = 0;
    bool integer = true; ///< print without decimals
    int precision = 2;   ///< decimals in the human form
    bool known = true;   ///< false: the value is not known (CSV leaves it empty, "—" shown)
    std::string path;    ///< "cell_bytes_per_token_per_rank", "pool.capacity_bytes"
    std::string section; ///< "Cell", "Pool", ...
};

/// The field list's rows that need only the report, in the order a reader meets them
/// (geometry, cell, pool and its terms, capacity, vLLM paging, roofline, weights, decode step).
/// Includes `kv_proj_weight_bytes_vs_checkpoint`: the K/V projection bytes of the evaluated h_kv
/// minus the checkpoint's, as loaded — what an h_kv what-if adds to the weights.
std::vector<ReportNumber> reportNumbers(const Report& r);
/// Every row of the field list: the above plus the layer groups and the GPU's figures.
std::vector<ReportNumber> reportNumbers(const ModelSpec& m, const GpuSpec& gpu, const Report& r);
/// A field-list row as an exported number.
ReportNumber toReportNumber(const ReportField& f);

/// The number named `key`, or nullopt.
std::optional<double> reportNumber(const Report& r, const std::string& key);

/// "key,label,value,unit" rows under a header line; values unrounded.
std::string reportCsv(const Report& r);
/// The same with every row (layer groups, the GPU's figures).
std::string reportCsv(const ModelSpec& m, const GpuSpec& gpu, const Report& r);
/// A two-column Markdown table (Quantity | Value) with human units, every row of the list.
std::string reportMarkdown(const ModelSpec& m, const GpuSpec& gpu, const Report& r);
/// The same object `kvscope-cli size --json` prints (format.h's jsonReport).
std::string reportJson(const ModelSpec& m, const GpuSpec& gpu, const Report& r);

/// A number as its ReportNumber would print it in CSV ("40960", "0.0270889").
std::string formatNumberPlain(const ReportNumber& n);
/// A number with a human unit ("40 KiB", "1,327,148 tokens", "8.0 FLOP/byte", "2.7 %"), at the
/// row's precision (formatFieldHuman).
std::string formatNumberHuman(const ReportNumber& n);

/// Quotes a CSV field when it holds a comma, quote or newline.
std::string csvField(const std::string& s);
/// Escapes '|' for a Markdown table cell.
std::string markdownCell(const std::string& s);

} // namespace kvscope
