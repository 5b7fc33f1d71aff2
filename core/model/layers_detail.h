// Internal to the layer resolution (core/model/layers.cpp, core/model/layers_state.cpp): checked
// config fields, recurrent-state geometry and per-group byte sizing.
#pragma once

#include "core/model/layers.h"
#include "core/result.h"

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

namespace kvscope::layersdetail {

using nlohmann::json;

constexpr std::int64_t kMaxField = 1 << 24;

/// A non-null integer field of `j`, validated to [min, max]; nullopt when absent or null.
Result<std::optional<std::int64_t>> intField(const json& j, const std::string& key,
                                             const std::string& prefix, std::int64_t min,
                                             std::int64_t max);

Result<std::int64_t> requiredInt(const json& j, const std::string& key, const std::string& prefix,
                                 const std::string& why);

/// First present alias of `keys`; error naming the first key when none is present.
Result<std::pair<std::int64_t, std::string>> requiredAlias(const json& j,
                                                           std::initializer_list<const char*> keys,
                                                           const std::string& prefix,
                                                           const std::string& why);

std::string stringField(const json& j, const char* key);

/// Element size of a state dtype named by the config ("float32", "bfloat16", ...).
Result<std::int64_t> stateDtypeBytes(const std::string& name, const std::string& field);

/// The SSM/recurrent state dtype: the config's mamba_ssm_cache_dtype / mamba_ssm_dtype (vLLM
/// copies Qwen3.5's mamba_ssm_dtype into cache_config.mamba_ssm_cache_dtype,
/// vllm/model_executor/models/config.py), else vLLM's default "auto": the model dtype.
Result<std::pair<std::int64_t, std::string>> ssmDtype(const json& cfg, const std::string& prefix,
                                                      std::int64_t served);

Result<LayerGroup> mambaGeometry(const LayerResolveInput& in, bool jamba);

Result<LayerGroup> gdnGeometry(const LayerResolveInput& in);

void fillBytes(LayerGroup& g, std::int64_t served);

std::string layerRef(const std::string& prefix, const char* field, std::size_t i);

} // namespace kvscope::layersdetail
