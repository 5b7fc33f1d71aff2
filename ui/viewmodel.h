// What the plots show, computed through core calls only (evaluate, validKvHeadCounts,
// validTpSizes, capacityCrossover): plain values the plot widgets receive.
#pragma once

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

struct TpPoint {
    std::int64_t tp = 1;
    std::int64_t tokens = 0;
    double concurrency = 0;
    double intensityFlopPerByte = 0;
    bool replicated = false;
    bool operator==(const TpPoint&) const = default;
};

struct TpSeries {
    std::string label; ///< "Llama-3-70B GQA-8"
    bool mla = false;
    std::int64_t cellBytesPerToken = 0;
    std::int64_t kvHeads = 0; ///< of the GQA series (0 for the latent)
    std::vector<TpPoint> points;
    bool operator==(const TpSeries&) const = default;
};

struct TpData {
    TpSeries primary;                    ///< the current model at its current h_kv
    std::optional<TpSeries> counterpart; ///< its MLA (or GQA) counterpart
    double poolGiBPerRank = 0;           ///< the fixed pool both series are evaluated at
    std::optional<double> crossoverTp;   ///< min(TP, h_kv) where GQA overtakes MLA
    std::string crossoverText;
    double ridgeFlopPerByte = 0;
    std::int64_t currentTp = 1;
    bool operator==(const TpData&) const = default;
};

/// Capacity and intensity against TP at a fixed pool per rank (the chapter's §6 comparison).
/// `mlaReference` is the MLA model a GQA model is compared with (DeepSeek-V3 when bundled);
/// `gqaReference` the GQA model an MLA model's latent is compared with (Llama-3-70B), so both
/// directions draw the chapter's pair and its 4.66 crossover. Without it an MLA model is
/// compared with its own GQA what-if.
TpData computeTpSeries(const AppState& s, const kvscope::Report& current,
                       const kvscope::ModelSpec* mlaReference,
                       const kvscope::ModelSpec* gqaReference = nullptr);

/// A deployment moved onto another model: keeps what still validates (TP, DCP, dtype),
/// drops an h_kv what-if the new model does not have, falls back to TP=1 / DCP=1.
kvscope::Deployment fitDeployment(const kvscope::ModelSpec& m, const kvscope::GpuSpec& gpu,
                                  kvscope::Deployment d);

/// The h_kv choices the slider offers: every divisor of h, descending (MHA … MQA); for MLA
/// models the latent (std::nullopt) comes last.
std::vector<std::optional<std::int64_t>> kvHeadChoices(const kvscope::ModelSpec& m);
/// A model's display name: the preset's title ("Llama-3-70B") when `ref` is a preset id,
/// else the resolved name.
std::string modelDisplayName(const std::string& ref, const kvscope::ModelSpec& m);

/// The label of an h_kv choice ("MHA", "GQA-8", "MQA", "MLA latent").
std::string kvChoiceLabel(const kvscope::ModelSpec& m, std::optional<std::int64_t> kv);
/// The label with the group size beside it where a view has room: "GQA-8 · g = 4" (the GQA
/// paper names GQA by its KV groups, the chapter's g is the query heads per group). MHA, MQA
/// and the latent are unchanged.
std::string variantWithGroup(const std::string& label, std::int64_t qHeads, std::int64_t kvHeads);
std::string variantWithGroup(const kvscope::Report& r);

/// TP values the slider offers at this h_kv (valid per core, up to 128).
std::vector<std::int64_t> tpChoices(const kvscope::ModelSpec& m, std::optional<std::int64_t> kv);
/// DCP values that validate for the rest of the deployment (always includes 1).
std::vector<std::int64_t> dcpChoices(const kvscope::ModelSpec& m, const kvscope::GpuSpec& gpu,
                                     const kvscope::Deployment& d);
/// Context lengths on the slider: 1k … 1M, two steps per octave.
const std::vector<std::int64_t>& contextChoices();
const std::vector<std::int64_t>& batchChoices();
/// KV dtypes that validate for this model.
std::vector<kvscope::KvDtype> kvDtypeChoices(const kvscope::ModelSpec& m,
                                             const kvscope::GpuSpec& gpu,
                                             const kvscope::Deployment& d);

/// Index of the value nearest to v (log distance) in a sorted list.
int nearestIndex(const std::vector<std::int64_t>& values, std::int64_t v);

} // namespace kvscope::ui
