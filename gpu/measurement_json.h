// The measurement file written by `kvscope-cli measure --json` and read by the GUI overlay.
//
// {
//   "backend": "cuda", "device": "NVIDIA H200", "model": "llama-3-70b",
//   "ceilings": {"read_bytes_per_s": 4.3e12, "peak_flop_per_s": {"bf16": 7.2e14, ...}},
//   "points": [{"variant": "GQA-8", "attention": "gqa", "q_heads": 64, "kv_heads": 8,
//               "head_dim": 128, "context": 8192, "batch": 16, "kv_dtype": "bf16",
//               "median_s": 1.1e-4, "bytes": 4.3e8, "flops": 3.4e9, "bytes_per_s": 3.9e12,
//               "flop_per_s": 3.1e13, "intensity_flop_per_byte": 7.9, "max_rel_error": 2e-3,
//               "kernel": "cuda-gqa-mma", "splits": 2}, ...]
// }
//
// MLA points also carry "kv_lora_rank" and "rope_dim" (kv_heads is 1 and head_dim is
// kv_lora_rank + rope_dim for them). Only points that passed their check are stored.
//
// Optional fields (written by this version, absent in older files, all in SI units):
//   ceilings: "read_kernel" (the read kernel that won, thread count, buffer), "peak_kernel",
//     "peak_kernel_for" {dtype: kernel}, "l2_read_bytes_per_s" and "l3_read_bytes_per_s"
//     (cache-resident read ceilings: the roofline's inner lines), "read_family" and
//     "peak_family" ([{"kernel", "bytes_per_s" | "flop_per_s"}], every kernel of the family
//     and what it measured; the ceilings are their maxima).
//   points: "min_s", "max_s" (fastest / slowest repeat), "attempts", "unstable" (spread too
//     wide on every attempt), "input_sets", "input_set_bytes" (the rotation),
//     "read_ceiling_before_bytes_per_s", "read_ceiling_after_bytes_per_s",
//     "peak_before_flop_per_s", "peak_after_flop_per_s", "read_ceiling_kernel" (the ceilings
//     measured right before and after the point), "read_ceiling_paired_bytes_per_s" and
//     "paired_pieces" (the read ceiling paired with the repeats, Measurement::readCeilingPaired:
//     the point's ceiling when present), and "placement" (written, not read back):
//     {"read_ceiling_bytes_per_s", "peak_flop_per_s", "roof_flop_per_s", "fraction_of_read",
//     "fraction_of_roof", "bound": "memory" | "compute", "above_ceiling"}.
//   "steps" (top level, optional: `measure --step`): whole decode steps of a scaled layer stack,
//     [{"layers", "model_layers", "hidden", "q_heads", "kv_heads", "head_dim", "intermediate",
//       "gated", "batch", "context", "kv_dtype", "kernel", "min_s", "median_s", "max_s",
//       "repeats", "weight_bytes", "kv_bytes", "activation_bytes", "bytes", "gemm_flops",
//       "attention_flops", "flops", "read_ceiling_bytes_per_s", "peak_flop_per_s", "roof_s",
//       "fraction_of_roof", "bound", "above_roof", "weight_sets", "resident_bytes",
//       "scaled_s" (median_s x model_layers / layers: written, not read back)}]. median_s is
//     the time of `layers` layers; the counts are read back from the shape (countStep).
#pragma once

#include "gpu/backend.h"
#include "gpu/step.h"

#include <string>
#include <vector>

namespace kvscope::gpu {

/// One measurement run: the device's ceilings and the points measured on it.
struct MeasurementSet {
    std::string backend; ///< "cpu" or "cuda"
    std::string device;  ///< device name
    std::string model;   ///< model id the points came from (may be empty)
    Ceilings ceilings;
    std::vector<Measurement> points;
    std::vector<StepMeasurement> steps; ///< whole decode steps (empty in older files)
};

/// Serialises to the format above (pretty-printed, 2-space indent).
std::string toJson(const MeasurementSet& set);
/// Parses the format above. On failure returns false and sets *error to one line naming the
/// field, e.g. "points[3].median_s: must be a positive number".
bool fromJson(const std::string& text, MeasurementSet* out, std::string* error);

/// File wrappers; errors name the path.
bool saveMeasurementJson(const MeasurementSet& set, const std::string& path, std::string* error);
bool loadMeasurementJson(const std::string& path, MeasurementSet* out, std::string* error);

} // namespace kvscope::gpu
