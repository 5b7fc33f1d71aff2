// The whole state a user works with (model, GPU, deployment) as a small versioned JSON file,
// and the local Hugging Face cache as a source of models.
#pragma once

#include "core/law/law.h"
#include "core/model/gpu.h"
#include "core/model/model.h"
#include "core/result.h"

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope {

/// A (model, GPU, deployment) triple, resolved and ready for evaluate().
struct Scenario {
    ModelSpec model;
    GpuSpec gpu;
    Deployment deployment;
};

/// The state as the user named it: references, not resolved specs, so a file stays small and
/// a preset update reaches old sessions.
struct Session {
    std::string model = "llama-3-70b"; ///< preset id, or a path to a config.json / its folder
    std::string gpu = "h100-sxm";      ///< preset id, or a path to a GPU JSON file
    std::optional<GpuSpec> customGpu;  ///< set: these figures, `gpu` is ignored
    Deployment deployment;
};

/// Current session file version (`"kvscope_session": 2`). Version 1 named gpu_mem_util
/// "util"; it still loads, with a deprecation line on stderr.
inline constexpr int kSessionVersion = 2;

/// The session as JSON text, one key per schema field (core/features/schema.h):
/// {"kvscope_session": 2, "model": "llama-3-70b", "gpu": "h100-sxm" | {custom figures},
///  "tp": 8, "dcp": 1, "h_kv": 8, "kv_dtype": "auto", "weight_dtype": "auto", "context": 8192,
///  "batch": 1, "gpu_mem_util": 0.9, "pool_model": "vllm", "pool_gib": 40,
///  "max_num_batched_tokens": 8192, "block_size": 16}
/// `h_kv` and `pool_gib` are omitted when unset.
std::string sessionToJson(const Session& s);

/// Parses session JSON text. Errors name the field ("tp: must be a positive integer").
Result<Session> parseSession(std::string_view jsonText);

Status saveSessionFile(const Session& s, const std::string& path);
Result<Session> loadSessionFile(const std::string& path);

/// Loads the model and GPU a session names and validates the deployment against them.
Result<Scenario> resolveSession(const Session& s);

/// Reads the state keys shared by session files and story steps from a JSON object: the
/// schema's keys (model, gpu, tp, dcp, h_kv as an integer, "latent" or "auto", kv_dtype, ...,
/// pool_gib as a number or null), and their deprecated spellings ("util"), each reported
/// once on stderr. Keys outside that set and `allowedExtraKeys` are rejected as unknown. Errors
/// name the field as `fieldPrefix + key` (prefix "steps[3]." gives "steps[3].tp: must be a positive
/// integer"). Sets `latentRequested` when h_kv is "latent" (the caller checks the model is MLA).
Result<Session> sessionFromJsonObject(const nlohmann::json& object, const std::string& fieldPrefix,
                                      const std::vector<std::string>& allowedExtraKeys,
                                      bool* latentRequested = nullptr);

/// The GPU figures as the JSON object parseGpuJson() reads.
nlohmann::json gpuToJson(const GpuSpec& gpu);

/// A config.json found in the local Hugging Face hub cache.
struct HfConfig {
    std::string repoId; ///< "meta-llama/Meta-Llama-3-8B"
    std::string path;   ///< .../models--meta-llama--Meta-Llama-3-8B/snapshots/<rev>/config.json
};

/// The hub cache folder: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
std::string huggingFaceHubDir();

/// Every models--*/snapshots/*/config.json under the hub cache (or `hubDir` when given),
/// sorted by repo id; one entry per repo (the most recently modified snapshot).
std::vector<HfConfig> findHuggingFaceConfigs(const std::string& hubDir = {});

} // namespace kvscope
