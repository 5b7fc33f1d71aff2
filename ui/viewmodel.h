// What the plots show, computed through core calls only (evaluate, and core/features/explore.h
// for the control choices and the TP comparison): plain values the plot widgets receive.
#pragma once

#include "core/features/explore.h"
#include "core/law/law.h"
#include "ui/appstate.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::ui {

/// One variant of the current model on the roofline.
struct VariantPoint {
    std::string label;     ///< "GQA-8", "MLA latent"
    std::string longLabel; ///< "GQA-8 · g = 4" where a view has room
    double intensityFlopPerByte = 0;
    double attainableFlopPerS = 0;
    double fractionOfPeak = 0;
    bool current = false;
    bool mla = false;
    std::string note; ///< why it was evaluated at another TP, if it was
    bool operator==(const VariantPoint&) const = default;
};

struct RooflineData {
    double bandwidthBytesPerS = 0;
    double peakBf16FlopPerS = 0;
    double peakFp32FlopPerS = 0;
    double ridgeFlopPerByte = 0;
    std::string gpuName;
    std::vector<VariantPoint> variants;
    bool operator==(const RooflineData&) const = default;
};

/// Every variant of the model (each valid h_kv, and the latent for MLA) at the current
/// deployment; a variant the current TP refuses is evaluated at TP=1 and says so.
RooflineData computeRoofline(const AppState& s, const kvscope::Report& current);

/// The §6 TP comparison of the current state (core's computeTpSeries).
TpData computeTpSeries(const AppState& s, const kvscope::Report& current,
                       const kvscope::ModelSpec* mlaReference,
                       const kvscope::ModelSpec* gqaReference = nullptr);

/// The label with the group size beside it where a view has room: "GQA-8 · g = 4" (the GQA
/// paper names GQA by its KV groups, the chapter's g is the query heads per group). MHA, MQA
/// and the latent are unchanged.
std::string variantWithGroup(const std::string& label, std::int64_t qHeads, std::int64_t kvHeads);
std::string variantWithGroup(const kvscope::Report& r);

/// Context lengths on the slider: 1k … 1M, two steps per octave.
const std::vector<std::int64_t>& contextChoices();
const std::vector<std::int64_t>& batchChoices();
/// Index of the value nearest to v (log distance) in a sorted list.
int nearestIndex(const std::vector<std::int64_t>& values, std::int64_t v);

} // namespace kvscope::ui
