// Per-layer cache kinds, grouped the way vLLM groups its KV cache (one KVCacheSpec per distinct
// layer kind and geometry; vllm/v1/kv_cache_interface.py). A config resolves into a list of
// LayerGroups; every group carries the config fields (or transformers' defaults) it came from.
#pragma once

#include "core/result.h"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kvscope {

/// What one decoder layer keeps per request.
///  full       K and V for every token (FullAttentionSpec)
///  sliding    K and V for the last `window` tokens (SlidingWindowSpec)
///  chunked    K and V within the current `window`-token chunk (Llama-4 local attention,
///             ChunkedLocalAttentionSpec)
///  cross      K and V of the encoder's tokens only (Llama-3.2-Vision); does not grow with text
///  mla        one latent of r + d_rope per token (MLAAttentionSpec), plus DeepSeek-V3.2's
///             sparse-attention indexer key where the config has one
///  compressed DeepSeek-V4: one latent entry per `window` (compress ratio) tokens plus a
///             sliding window of uncompressed entries
///  linear     Gated DeltaNet: a conv state and a recurrent state per request (MambaSpec)
///  mamba      Mamba-2 / Mamba-1: a conv state and an SSM state per request (MambaSpec)
///  none       no attention (Nemotron-H MLP/MoE layers, DeciLM no_op)
enum class LayerKind { Full, Sliding, Chunked, Cross, Mla, Compressed, Linear, Mamba, None };
std::string toString(LayerKind k);

/// Kinds whose cache grows with every token of the request.
bool storesPerTokenKv(LayerKind k);
/// Kinds whose cache is a fixed-size state per request (linear, mamba).
bool isFixedState(LayerKind k);

/// The recurrent state of a linear / mamba layer, as vLLM's MambaStateShapeCalculator shapes
/// it (vllm/model_executor/layers/mamba/mamba_utils.py). Element counts are whole-model (TP=1);
/// stateBytesPerRank() shards them.
struct StateGeometry {
    enum class Form { None, Mamba1, Mamba2, GatedDeltaNet } form = Form::None;
    std::int64_t convKernel = 0;   ///< conv state keeps convKernel - 1 columns
    std::int64_t intermediate = 0; ///< mamba: d_inner (= heads · head_dim for Mamba-2)
    std::int64_t nGroups = 0;      ///< Mamba-2 B/C groups
    std::int64_t stateSize = 0;    ///< mamba: d_state
    std::int64_t heads = 0;        ///< Mamba-2 heads / GDN value heads
    std::int64_t headDim = 0;      ///< Mamba-2 head dim / GDN value head dim
    std::int64_t keyHeads = 0;     ///< GDN key heads
    std::int64_t keyHeadDim = 0;   ///< GDN key head dim
    std::int64_t convBytes = 2;    ///< per element of the conv state (mamba_cache_dtype / model)
    std::int64_t ssmBytes = 2;     ///< per element of the SSM / recurrent state
};

struct LayerGroup {
    LayerKind kind = LayerKind::Full;
    std::vector<std::int64_t> layers;   ///< 0-based decoder-layer indices, ascending
    std::optional<std::int64_t> window; ///< sliding window, chunk size or compress ratio
    std::int64_t kvHeads = 0;           ///< KV heads (1 for MLA's latent)
    std::int64_t headDimK = 0;          ///< per head; MLA: r + d_rope
    std::int64_t headDimV = 0;          ///< per head; 0 where V is not stored (MLA)
    std::int64_t indexerHeadDim = 0;    ///< DeepSeek sparse-attention indexer key (0 = none)
    std::int64_t encoderTokens = 0;     ///< cross: encoder tokens per request
    std::int64_t auxWindow = 0;         ///< compressed: the uncompressed sliding window
    /// DeepSeek-V4 layer (compress_ratios 0, 4 or 128): vLLM caches it in the fp8_ds_mla layout
    /// of deepseekV4CacheSpecs(), whatever the served dtype.
    bool deepseekV4 = false;
    std::int64_t ropeDim = 0; ///< DeepSeek-V4: qk_rope_head_dim (bf16 part of an entry)
    StateGeometry state;
    /// At the model's served dtype, whole model (TP = 1): what `size --json` prints.
    std::int64_t bytesPerTokenPerLayer = 0;
    std::int64_t stateBytesPerRequestPerLayer = 0;
    std::string source;

    std::int64_t count() const { return static_cast<std::int64_t>(layers.size()); }
    /// Same kind and cache geometry (the layers could share one vLLM KVCacheSpec).
    bool sameSpec(const LayerGroup& o) const;
};

/// Bytes the indexer key of one token takes in one layer: fp8 values plus one fp32 scale per
/// 128 values (vllm/model_executor/models/deepseek_v2.py, Indexer: head_dim + head_dim //
/// quant_block_size * 4 with quant_block_size = 128, stored as uint8 whatever the KV dtype).
std::int64_t indexerBytesPerToken(std::int64_t indexerHeadDim);

/// One KV cache spec vLLM registers for one DeepSeek-V4 layer (vllm/v1/kv_cache_interface.py
/// MLAAttentionSpec / SlidingWindowMLASpec with alignment 576). `full` specs grow with the request
/// (FullAttentionSpec rules); the others keep a sliding `window` of block-size slots.
struct Dsv4CacheSpec {
    std::string name;                 ///< vLLM layer-name suffix, e.g. "swa_cache"
    bool full = false;                ///< MLAAttentionSpec (else SlidingWindowMLASpec)
    std::int64_t blockSize = 0;       ///< tokens per block
    std::int64_t window = 0;          ///< sliding window in tokens (0 for full specs)
    std::int64_t entriesPerBlock = 0; ///< storage_block_size = block_size // compress_ratio
    std::int64_t entryBytes = 0; ///< bytes of one stored entry (token, compressed token, state)
    std::int64_t pageBytes = 0;  ///< entriesPerBlock × entryBytes rounded up to 576
};

/// The specs vLLM registers for one DeepSeek-V4 layer group (`g.deepseekV4`) at a full-attention
/// block size `blockSize` (a multiple of 256), in registration order:
///  swa_cache (every layer): DeepseekV4SWACache, block 64, window sliding_window, 584 B entries
///  attn (compress ratio r > 1): DeepseekV4MLAAttention, block_size // r entries of 584 B
///  compressor.state_cache (r > 1): CompressorStateCache, fp32 kv + score state of
///    2 · coff · head_dim (coff = 2 for r = 4, else 1), block 4 (r = 4) or 8 (r = 128), window
///    coff · r
///  indexer.k_cache (r = 4): DeepseekV4IndexerCache, block_size // 4 entries of 132 B
///  indexer.compressor.state_cache (r = 4): as the compressor, head_dim = index_head_dim
/// Empty for other groups.
std::vector<Dsv4CacheSpec> deepseekV4CacheSpecs(const LayerGroup& g, std::int64_t blockSize);

/// One request's compressor ring buffers in one DeepSeek-V4 layer: window × state entry summed
/// over its state caches (the unpaged state, independent of the context length).
std::int64_t deepseekV4StateBytes(const LayerGroup& g);

/// One request's fixed state in one layer on one rank (linear / mamba), vLLM's shapes:
///  mamba2_state_shape: conv (conv_kernel - 1) × (d_inner + 2·n_groups'·d_state) / TP, where
///    n_groups' adds tp - n_groups when TP does not divide n_groups (extra_groups_for_head_shards);
///    SSM (heads / TP) × head_dim × d_state.
///  mamba1_state_shape: conv (conv_kernel - 1) × d_inner / TP; SSM d_inner / TP × d_state.
///  gated_delta_net_state_shape: conv (conv_kernel - 1) × (2·k_heads·k_dim + v_heads·v_dim) / TP;
///    recurrent (v_heads / TP) × v_dim × k_dim.
std::int64_t stateBytesPerRank(const StateGeometry& s, std::int64_t tp);

/// Resolves the per-layer kinds of `cfg` (the text config) into groups, in order of first
/// layer. `prefix` ("text_config." or "") prefixes field names in errors and provenance;
/// `kvHeads`, `headDim` are the model-wide attention geometry already resolved, `mla` with
/// `latentDim` (r + d_rope) when the model caches an MLA latent; `servedBytes` the 16-bit (or
/// other) element size of the served dtype. Warnings about approximations are appended.
struct LayerResolveInput {
    const nlohmann::json* cfg = nullptr;
    const nlohmann::json* root = nullptr; ///< the whole config (vision_config lives there)
    std::string prefix;
    std::string modelType;
    std::int64_t layers = 0;
    std::int64_t kvHeads = 0;
    std::string kvHeadsSource;
    std::int64_t headDim = 0;
    bool mla = false;
    std::int64_t latentDim = 0;
    std::int64_t hidden = 0;
    std::int64_t servedBytes = 2;
};
struct LayerResolveOutput {
    std::vector<LayerGroup> groups;
    std::int64_t mtpLayers = 0;
    std::string mtpSource;
    std::vector<std::string> warnings;
};
Result<LayerResolveOutput> resolveLayerGroups(const LayerResolveInput& in);

} // namespace kvscope
