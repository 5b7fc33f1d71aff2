// The one list of every number a Report shows. The text report (`kvscope-cli size`), its
// `--json`, the CSV / Markdown / clipboard export, the PDF and the GUI's numbers panel all read
// their numbers from here, so that a number added, renamed or rounded differently changes in one
// place. Each row names where it sits in `size --json` (its key), its export name, label, unit,
// section and precision; rows exist per layer group and per pool term where the model has them.
#pragma once

#include "core/law/law.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope {

/// One number of a report.
struct ReportField {
    /// Where `size --json` carries it: object keys and array indices joined by '.'
    /// ("pool.cuda_context_bytes", "model.layer_groups.1.bytes_per_token_per_layer").
    std::string key;
    /// The flat export name: CSV's key column and what story files quote in
    /// `key_numbers[].field` ("pool_cuda_context_bytes").
    std::string name;
    std::string label;   ///< "CUDA context + cuBLAS workspace"
    std::string unit;    ///< "B", "MiB", "B/s", "tokens", "requests", "FLOP", "FLOP/s",
                         ///< "FLOP/byte", "fraction", "s", "tokens/s", "bits", "" for counts
    std::string section; ///< "Model", "Parallelism", "Cell", "Layer groups", "Pool", ...
    int precision = 0;   ///< decimals when shown (ms for "s", percent for "fraction")
    bool integer = true; ///< an integer in JSON and CSV
    std::optional<double> value; ///< nullopt: not known (JSON null, shown "—")
    std::string alsoAt;          ///< a second JSON key carrying the same number (older name)
    /// Where the figure comes from when the row names it (a datasheet): `size --json` carries it
    /// next to the number as "<key>_source", the numbers panel in the tooltip.
    std::string source;
    bool panel = false; ///< on the numbers panel's line for its section (the GPU line)
};

/// Every number of `r` in reading order. Rows that need the model (its layer groups, provenance
/// counts) or the GPU (datasheet figures) appear only when `m` / `gpu` is given.
std::vector<ReportField> reportFields(const Report& r, const ModelSpec* m = nullptr,
                                      const GpuSpec* gpu = nullptr);

/// The row whose JSON key is `key`, or nullptr.
const ReportField* findField(const std::vector<ReportField>& fields, std::string_view key);

/// The value as text with a human unit ("40 KiB", "1,327,148 tokens", "8.0 FLOP/byte",
/// "2.7 %", "12.345 ms"), at the row's precision; "—" when unknown.
std::string formatFieldHuman(const ReportField& f);
/// The value unrounded for machines ("40960", "0.0270889"); "" when unknown.
std::string formatFieldPlain(const ReportField& f);

/// The JSON keys of one layer group's rows (prefix "model.layer_groups.<i>.").
std::string layerGroupKey(std::size_t group, std::string_view field);

} // namespace kvscope
