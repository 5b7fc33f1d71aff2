// What the interactive explorer offers and compares, Qt-free: the choices each control offers
// for a model (h_kv, TP, DCP, KV dtype), a deployment carried onto another model, and the
// chapter's §6 comparison of capacity and intensity against TP at a fixed pool per rank, with
// its crossover read in words.
#pragma once

#include "core/law/law.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvscope {

/// The MLA model a GQA-family model is compared with: the chapter's DeepSeek-V3.
inline constexpr const char* kMlaReferenceModelId = "deepseek-v3";

/// The pool per rank the TP comparison fixes when the current deployment leaves none: the
/// chapter's P = 40 GiB ("the following comparison deliberately fixes P=40 GiB", §6).
inline constexpr double kComparisonPoolGiB = 40.0;

/// A deployment moved onto another model (or GPU): keeps what still validates (TP, DCP, dtype),
/// drops an h_kv what-if the new model does not have, falls back to TP=1 / DCP=1.
Deployment fitDeployment(const ModelSpec& m, const GpuSpec& gpu, Deployment d);

/// The h_kv choices: every divisor of h, descending (MHA … MQA); for MLA models the latent
/// (std::nullopt) comes last.
std::vector<std::optional<std::int64_t>> kvHeadChoices(const ModelSpec& m);
/// TP values valid at this h_kv, up to 128 (never empty: TP=1).
std::vector<std::int64_t> tpChoices(const ModelSpec& m, std::optional<std::int64_t> kv);
/// DCP values that validate for the rest of the deployment (always includes 1).
std::vector<std::int64_t> dcpChoices(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d);
/// KV dtypes that validate for this model (and the deployment's own).
std::vector<KvDtype> kvDtypeChoices(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d);

/// A model's display name: the preset's title ("Llama-3-70B") when `ref` or the model's name is
/// a preset id, else the resolved name.
std::string modelDisplayName(const std::string& ref, const ModelSpec& m);
/// The label of an h_kv choice ("MHA", "GQA-8", "MQA", "MLA latent").
std::string kvChoiceLabel(const ModelSpec& m, std::optional<std::int64_t> kv);

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

/// The capacity crossover of a GQA series against an MLA one, read for the plot: the TP where
/// GQA overtakes MLA (min(TP, h_kv) = c_gqa / c_mla, §6) when it lies within 1 … h_kv, else a
/// sentence saying which holds more at every TP.
struct CrossoverReading {
    double ratio = 0;                  ///< c_gqa / c_mla
    std::optional<double> crossoverTp; ///< set when 1 < ratio ≤ h_kv
    std::string text;                  ///< "crossover at TP = 4.66", "MQA holds more ..."
};
std::optional<CrossoverReading> readCrossover(const TpSeries& gqa, const TpSeries& mla);

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

/// Capacity and intensity against TP at a fixed pool per rank (the chapter's §6 comparison):
/// the current pool (`current`, the report of `d`), or kComparisonPoolGiB when it is empty.
/// `mlaReference` is the MLA model a GQA model is compared with (DeepSeek-V3 when bundled);
/// `gqaReference` the GQA model an MLA model's latent is compared with (Llama-3-70B), so both
/// directions draw the chapter's pair and its 4.66 crossover. Without it an MLA model is
/// compared with its own GQA what-if (h_kv = 8 where h allows).
TpData computeTpSeries(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                       const Report& current, const ModelSpec* mlaReference,
                       const ModelSpec* gqaReference = nullptr);

} // namespace kvscope
