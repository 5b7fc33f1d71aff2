// The engines' validation rules: which deployments vLLM and SGLang accept (the parallel layout,
// the cache dtype and the sizes), and the h_kv and TP values a model admits.
#include "core/format.h"
#include "core/law/law.h"
#include "core/law/law_detail.h"

#include <algorithm>
#include <string>

namespace kvscope {

using lawdetail::effectiveKvHeads;
using lawdetail::latentMode;
using lawdetail::str;

std::vector<std::int64_t> validKvHeadCounts(const ModelSpec& m) {
    std::vector<std::int64_t> out;
    const std::int64_t h = m.qHeads.value;
    for (std::int64_t k = h; k >= 1; --k)
        if (h % k == 0)
            out.push_back(k);
    return out;
}

namespace {

/// tp, dcp, pp, the static memory fraction and the KV heads: the parallel layout the engines
/// accept (the rules in the order vLLM and SGLang check them).
Status validateLayout(const ModelSpec& m, const Deployment& d) {
    const std::int64_t h = m.qHeads.value;
    if (d.tp < 1)
        return makeError("tp", "must be a positive integer, got " + str(d.tp));
    if (d.tp > kMaxTp)
        return makeError("tp", "must be at most " + str(kMaxTp) + ", got " + str(d.tp));
    if (d.dcp < 1)
        return makeError("dcp", "must be a positive integer, got " + str(d.dcp));
    if (d.pp < 1 || d.pp > m.layers.value)
        return makeError("pp", "must be between 1 and the layer count (" + str(m.layers.value) +
                                   "), got " + str(d.pp));
    if (d.memFractionStatic && !(*d.memFractionStatic > 0 && *d.memFractionStatic < 1))
        return makeError("mem-fraction-static",
                         "must be in (0, 1), got " + std::to_string(*d.memFractionStatic));
    if (d.kvHeads) {
        const std::int64_t k = *d.kvHeads;
        if (k < 1)
            return makeError("h_kv", "must be a positive integer, got " + str(k));
        if (k > h || h % k != 0)
            return makeError("h_kv", "must divide num_attention_heads (" + str(h) + "); " + str(k) +
                                         " does not");
    }
    if (h % d.tp != 0)
        return makeError("tp", "Total number of attention heads (" + str(h) +
                                   ") must be divisible by tensor parallel size (" + str(d.tp) +
                                   ")");
    const std::int64_t hkv = effectiveKvHeads(m, d);
    const bool latent = latentMode(m, d);
    if (!latent) {
        if (hkv >= d.tp && hkv % d.tp != 0)
            return makeError("tp", "Total number of KV heads (" + str(hkv) +
                                       ") must be divisible by tensor parallel size (" + str(d.tp) +
                                       ") when it is at least the TP size");
        if (hkv < d.tp && d.tp % hkv != 0)
            return makeError("tp", "tensor parallel size (" + str(d.tp) +
                                       ") must be a multiple of the number of KV heads (" +
                                       str(hkv) + ") for the heads to be replicated");
    }
    if (d.dcp > 1) {
        if (d.tp % d.dcp != 0)
            return makeError("dcp", "tensor parallel size (" + str(d.tp) +
                                        ") must be divisible by decode context parallel size (" +
                                        str(d.dcp) + ")");
        if (!latent && d.tp <= hkv)
            return makeError("dcp", "Decode context parallelism for GQA/MQA requires "
                                    "--tensor-parallel-size (" +
                                        str(d.tp) +
                                        ") to be greater than the model's total number of KV "
                                        "heads (" +
                                        str(hkv) + ")");
    }
    return Ok{};
}

/// The cache dtype against the layout, then the sizes: context, batch, util, block, pool.
Status validateSizes(const ModelSpec& m, const Deployment& d) {
    const bool latent = latentMode(m, d);
    if (!kvDtypeInfo(d.kvDtype).mlaLatent && latent)
        return makeError("kv-dtype", toString(d.kvDtype) +
                                         " is a per-head K/V layout; vLLM's MLA latent cache "
                                         "does not take it (use fp8 or fp8_ds_mla)");
    if (!kvDtypeInfo(d.kvDtype).perHeadKv && !latent)
        return makeError("kv-dtype", toString(d.kvDtype) +
                                         " is vLLM's MLA latent layout; this deployment caches "
                                         "per-head K/V (use fp8)");
    if (d.context < 1)
        return makeError("context", "must be a positive number of tokens, got " + str(d.context));
    if (d.context > kMaxContext)
        return makeError("context", "must be at most " + withCommas(kMaxContext) + " tokens");
    if (d.batch < 1)
        return makeError("batch", "must be a positive integer, got " + str(d.batch));
    if (d.batch > kMaxBatch)
        return makeError("batch", "must be at most " + withCommas(kMaxBatch));
    if (!(d.gpuMemUtil > 0.0 && d.gpuMemUtil <= 1.0))
        return makeError("gpu-mem-util", "must be in (0, 1], got " + fixed(d.gpuMemUtil, 3));
    static constexpr std::int64_t kBlocks[] = {1, 8, 16, 32, 64, 128, 256};
    if (std::find(std::begin(kBlocks), std::end(kBlocks), d.blockSize) == std::end(kBlocks))
        return makeError("block-size", "must be one of 1, 8, 16, 32, 64, 128, 256 (vLLM's "
                                       "--block-size), got " +
                                           str(d.blockSize));
    if (d.maxNumBatchedTokens < 1 || d.maxNumBatchedTokens > kMaxContext)
        return makeError("max-num-batched-tokens",
                         "must be a positive integer up to " + withCommas(kMaxContext));
    if (d.poolGiB && !(*d.poolGiB > 0.0 && *d.poolGiB <= 1e6))
        return makeError("pool-gib", "must be a positive number of GiB (at most 1e6)");
    return Ok{};
}

} // namespace

Status validate(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d) {
    if (auto s = validateLayout(m, d); !s.ok())
        return s;
    if (auto s = validateSizes(m, d); !s.ok())
        return s;
    if (auto s = validateGpu(gpu); !s.ok())
        return Error{"gpu." + s.error().field, s.error().rule};
    return Ok{};
}

std::vector<std::int64_t> validTpSizes(const ModelSpec& m, std::int64_t kvHeads,
                                       std::int64_t maxTp) {
    std::vector<std::int64_t> out;
    const std::int64_t h = m.qHeads.value;
    const bool latent = m.mla && kvHeads <= 0;
    const std::int64_t hkv = latent ? 1 : (kvHeads > 0 ? kvHeads : m.kvHeads.value);
    for (std::int64_t tp = 1; tp <= std::min(maxTp, h); ++tp) {
        if (h % tp != 0)
            continue;
        if (!latent && ((hkv >= tp && hkv % tp != 0) || (hkv < tp && tp % hkv != 0)))
            continue;
        out.push_back(tp);
    }
    return out;
}

} // namespace kvscope
