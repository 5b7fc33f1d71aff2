// vLLM's KV pool, release by release. The worker (vllm/v1/worker/gpu_worker.py,
// determine_available_memory) asks for util × the total memory the driver reports, loads the
// weights, runs one profiling forward pass of max_num_batched_tokens tokens plus a dummy sampler
// pass, and gives the KV cache what is left:
//   pool = util × total − weights − torch peak increase − non-torch increase [− CUDA graphs]
// Each term's rule below names the release range it holds for and its source; docs/engines.md
// lists the logs each was checked on.
#include "core/engines/engines.h"
#include "core/format.h"
#include "core/model/params.h"

#include <algorithm>
#include <cmath>

namespace kvscope {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::int64_t kMiB = 1024 * 1024;

std::int64_t gibBytes(double g) {
    return std::llround(g * kGiB);
}

/// What one vLLM release does in its profiling pass and budget.
struct VllmRules {
    std::string range; ///< "0.17–0.20"
    /// Sampler pass: bytes per (row × vocab) logit element, and whether the rows are every one of
    /// max_num_batched_tokens tokens (true) or one per dummy request (false).
    int samplerBytesPerLogit = 16;
    bool samplerOnEveryToken = false;
    bool samplerAddsToForward = false;  ///< peak = forward + sampler (else max of the two)
    bool moeWorkspaceKept = false;      ///< fused-MoE workspace still held during the sampler
    bool tritonTopKTopP = false;        ///< Triton top-k/top-p with its [SMs, vocab] buffer
    std::int64_t nonTorchTp1 = 0;       ///< non-torch increase of the profiling pass, one GPU
    std::int64_t collectiveBuffers = 0; ///< extra non-torch memory once ranks talk (TP or PP > 1)
    bool graphsSubtracted = false;      ///< CUDA graphs taken off the pool before sizing it
    int graphModes = 2;                 ///< PIECEWISE and FULL captures
    int graphSizes = 51;                ///< captured batch sizes up to 512
    std::string samplerSource, nonTorchSource, graphSource;
};

VllmRules rulesFor(const EngineSpec& e) {
    VllmRules r;
    if (!e.atLeast(0, 11)) {
        // V0 and V1 up to 0.10: FlashInfer's top-k/top-p sampler is the default on CUDA
        // ("Using FlashInfer for top-p & top-k sampling." in the 0.10.1.1 logs), so the dummy
        // sampler pass holds the bf16 logits and their fp32 copy: 6 B per element, one row per
        // dummy request (PR #13594: hidden_states[logit_indices]).
        r.range = "up to 0.10";
        r.samplerBytesPerLogit = 6;
        r.samplerAddsToForward = true;
        r.samplerSource = "PR #13594 (dummy sampler on one row per request); FlashInfer sampler "
                          "default (topk_topp_sampler.py): bf16 + fp32 logits";
        r.graphModes = 1;  // cudagraph_mode PIECEWISE ("cudagraph_mode":1 in the 0.10.1.1 log)
        r.graphSizes = 67; // 1, 2, 4, then every 8 up to 512 (cudagraph_capture_sizes)
    } else if (!e.atLeast(0, 17)) {
        // 0.11–0.16: the profiling pass produces fp32 logits for every one of the
        // max_num_batched_tokens tokens on top of the forward pass's activations. Measured:
        // Llama-3.1-8B 4.76 GiB (0.11, H100), Qwen3-14B 5.64 GiB (0.15–0.16, H100).
        r.range = "0.11–0.16";
        r.samplerBytesPerLogit = 4;
        r.samplerOnEveryToken = true;
        r.samplerAddsToForward = true;
        r.samplerSource = "fp32 logits for all max_num_batched_tokens tokens; measured on "
                          "Llama-3.1-8B (0.11) and Qwen3-14B (0.15–0.16) startup logs";
    } else {
        // 0.17 on: the dummy sampler pass runs on one row per dummy request,
        // min(max_num_seqs, max_num_batched_tokens) rows, through the native top-k/top-p path
        // (FlashInfer's sampler is opt-in: "FlashInfer top-p/top-k sampling is available but
        // disabled by default" in the 0.19 logs), which masks the fp32 logits in place with
        // Triton (PR #33538, v1/sample/ops/topk_topp_triton.py apply_top_k_top_p_triton: no
        // sort). Held at the peak, per logit: the bf16 logits compute_logits returned (2 B, still
        // referenced by _dummy_sampler_run), their fp32 copy (4 B, sampler.py), the softmax
        // probabilities (4 B) and random_sample's exponential noise q (4 B) = 14 B; plus the
        // kernel's cached [min(SMs, rows), vocab] fp32 buffer.
        r.range = "0.17 on";
        r.samplerBytesPerLogit = 14;
        r.tritonTopKTopP = true;
        r.moeWorkspaceKept = true;
        r.samplerSource = "sampler.py + topk_topp_sampler.py forward_native: bf16 logits, fp32 "
                          "logits, softmax probs, exponential noise; apply_top_k_top_p_triton "
                          "(PR #33538) masks in place with a [SMs, vocab] fp32 buffer; rows = "
                          "min(max_num_seqs, tokens)";
    }
    if (!e.atLeast(0, 17)) {
        // 0.11 logs: non-torch memory 0.13 GiB at TP 1; 0.55 GiB at TP 2 (NCCL communicator
        // buffers, channels × peers × NCCL_BUFFSIZE, plus custom all-reduce's IPC buffers).
        r.nonTorchTp1 = 133 * kMiB;
        r.collectiveBuffers = 416 * kMiB;
        r.nonTorchSource = "measured: 0.13 GiB (TP 1), 0.55 GiB (TP 2) in vLLM 0.11 H100 logs";
    } else {
        // 0.19 logs ("non-torch forward increase memory"): 0.24–0.27 GiB in the TP 1 runs,
        // 2.06–2.17 GiB at TP 2 and TP 4 (NCCL, custom all-reduce and symmetric-memory buffers).
        r.nonTorchTp1 = gibBytes(0.25);
        r.collectiveBuffers = gibBytes(1.85);
        r.nonTorchSource = "measured: 0.24–0.27 GiB (TP 1, 14 logs), 2.06–2.17 GiB (TP 2/4, "
                           "5 logs) in the vLLM 0.19 H100 logs";
    }
    // PR #30515: from 0.21 the worker captures CUDA graphs in a profiling pass and subtracts
    // their estimate before sizing the pool ("Estimated CUDA graph memory: X GiB total");
    // 0.19–0.20 print the estimate but do not subtract it (VLLM_MEMORY_PROFILER_ESTIMATE_
    // CUDAGRAPHS=0 by default); earlier releases capture after sizing the pool.
    r.graphsSubtracted = e.atLeast(0, 21);
    r.graphSource = "PR #30515: shared pool = largest first capture + (n − 1) × per graph, per "
                    "mode; 228 MiB first capture, 0.2 MiB × L (PIECEWISE) + 6 MiB (FULL) per "
                    "graph, from the 0.19 logs' estimate lines";
    return r;
}

bool latent(const ModelSpec& m, const Deployment& d) {
    return m.mla && !d.kvHeads;
}

/// Per-token elements of the widest stage of one layer's forward pass, per rank.
std::int64_t widestStage(const ModelSpec& m, const Deployment& d) {
    const std::int64_t tp = d.tp;
    const std::int64_t kvHeads = d.kvHeads.value_or(m.kvHeads.value);
    const std::int64_t qkv =
        latent(m, d) ? (m.qLoraRank.value + m.kvLoraRank.value + m.qkRopeHeadDim.value +
                        m.qHeads.value * (m.qkNopeHeadDim.value + m.qkRopeHeadDim.value) / tp)
                     : ((m.qHeads.value + 2 * kvHeads) * m.keyDim()) / tp;
    const std::int64_t attnOut = m.qHeads.value * m.valueDim() / tp;
    std::int64_t width = m.intermediate.value;
    if (m.routedExperts.value > 0)
        width = std::max(width, (m.expertsPerToken.value + m.sharedExperts.value) *
                                    m.moeIntermediate.value);
    const std::int64_t mats = m.gatedMlp.value ? 3 : 2; // gate+up output, then act output
    return std::max(qkv + attnOut, mats * width / tp);
}

/// The forward pass of `tokens` tokens: the residual stream and the normed hidden state stay
/// live (2·d) beside the widest stage, 16-bit activations.
std::int64_t forwardPeak(const ModelSpec& m, const Deployment& d, std::int64_t tokens) {
    return tokens * (2 * m.hidden.value + widestStage(m, d)) * 2;
}

/// The fused-MoE workspaces of the modular kernel (model_executor/layers/fused_moe,
/// TritonExperts.workspace_shapes): workspace1 = M × top_k × max(N / 2, K) and workspace2 =
/// M × top_k × max(N, K), 16-bit, with N = 2 × moe_intermediate / TP (gate and up) and K the
/// hidden size. The workspace manager keeps them between calls, so they are still held while the
/// dummy sampler runs. Checked on Qwen3-30B-A3B and Llama-4-Scout TP 4 (0.19).
std::int64_t moeWorkspace(const ModelSpec& m, const Deployment& d, std::int64_t tokens) {
    if (m.routedExperts.value <= 0)
        return 0;
    // An mxfp4 checkpoint served as mxfp4 runs its experts through triton_kernels' matmul_ogs
    // (quantization/mxfp4.py, the Triton backend on Hopper), which allocates its outputs per
    // call: no fused-MoE workspace outlives the forward pass. Checked on gpt-oss-20b TP 2 (0.19).
    if (m.weights.quant.present && m.weights.quant.scheme.name == "mxfp4" &&
        (d.weightDtype == WeightDtype::Auto || d.weightDtype == WeightDtype::MXFP4))
        return 0;
    const std::int64_t n = m.moeIntermediate.value / d.tp;
    const std::int64_t k = m.expertsPerToken.value;
    const std::int64_t hidden = m.hidden.value;
    return tokens * k * (std::max(n, hidden) + std::max(2 * n, hidden)) * 2;
}

std::string lowerId(const GpuSpec& gpu) {
    std::string id = gpu.id;
    std::transform(id.begin(), id.end(), id.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return id;
}

/// Streaming multiprocessors (AMD: compute units) of the GPU presets, from the vendors'
/// datasheets and architecture whitepapers; 132 (H100 SXM) when the preset is not listed.
std::int64_t smCount(const GpuSpec& gpu) {
    static const std::pair<const char*, std::int64_t> kSms[] = {
        {"h100-pcie", 114}, {"h100", 132},     {"h200", 132},         {"h800", 132},
        {"h20", 78},        {"a100", 108},     {"a10g", 80},          {"l40s", 142},
        {"l40", 142},       {"l4", 58},        {"b200", 148},         {"gb200", 148},
        {"rtx-3090", 82},   {"rtx-4090", 128}, {"rtx-pro-6000", 188}, {"rtx-2000-ada", 22},
        {"mi300x", 304},    {"mi325x", 304},   {"mi355x", 256}};
    const std::string id = lowerId(gpu);
    for (const auto& [prefix, sms] : kSms)
        if (id.rfind(prefix, 0) == 0)
            return sms;
    return 132;
}

/// cuBLAS workspace PyTorch allocates through its caching allocator at the first GEMM of the
/// profiling pass and keeps (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize):
/// 32 MiB on sm90 (Hopper), ":4096:2:16:8" = 8 MiB + 128 KiB elsewhere; hipBLAS 32 MiB, 128 MiB
/// on gfx94x/gfx95x (MI300X, MI325X, MI355X).
std::int64_t cublasWorkspace(const GpuSpec& gpu) {
    const std::string id = lowerId(gpu);
    if (id.rfind("mi3", 0) == 0)
        return 128 * kMiB;
    for (const char* hopper : {"h100", "h200", "h800", "h20", "gh200"})
        if (id.rfind(hopper, 0) == 0)
            return 32 * kMiB;
    return 8 * kMiB + 128 * 1024;
}

struct Stage {
    std::int64_t layers = 0;
    std::int64_t weights = 0;
    std::int64_t activation = 0;
    std::int64_t pool = 0;
};

/// Weights of one stage: its share of the layer parameters, the embedding on the first stage,
/// lm_head (or, tied, a copy of the embedding) on the last.
std::int64_t stageWeights(const ModelSpec& m, std::int64_t weightBytesPerRank, std::int64_t stage,
                          std::int64_t pp, std::int64_t layers) {
    if (pp == 1)
        return weightBytesPerRank;
    const ParamCount p = countParams(m);
    const double total = static_cast<double>(std::max<std::int64_t>(1, p.total()));
    const double perParam = static_cast<double>(weightBytesPerRank) / total;
    const double layerParams = static_cast<double>(p.total() - p.embedding - p.lmHead);
    double params = layerParams * static_cast<double>(layers) / static_cast<double>(m.layers.value);
    if (stage == 0)
        params += static_cast<double>(p.embedding);
    if (stage == pp - 1)
        params += static_cast<double>(p.lmHead > 0 ? p.lmHead : p.embedding);
    return std::llround(params * perParam);
}

void addTerm(PoolBreakdown& p, std::string key, std::string label, std::int64_t bytes,
             bool subtracted, std::string rule, std::string source) {
    p.terms.push_back(PoolTerm{std::move(key), std::move(label), bytes, subtracted, std::move(rule),
                               std::move(source)});
}

std::string gibText(std::int64_t b) {
    return fixed(static_cast<double>(b) / kGiB, 2) + " GiB";
}

/// What the sampling stage holds beside the logits while the dummy sampler runs.
struct SamplerHeld {
    std::int64_t bytes = 0;
    std::string what;
};

SamplerHeld samplerHeld(const ModelSpec& m, const Deployment& d, const VllmRules& r,
                        const GpuSpec& gpu, std::int64_t rows) {
    const std::int64_t tokens = d.maxNumBatchedTokens;
    SamplerHeld h;
    auto add = [&h](std::int64_t bytes, const char* what) {
        if (bytes <= 0)
            return;
        h.bytes += bytes;
        h.what += std::string(h.what.empty() ? "" : ", ") + what;
    };
    // profile_run keeps the forward pass's hidden states (tokens × d, 16-bit) while the dummy
    // sampler runs on their last-token rows (hidden_states[logit_indices], then rand_like).
    if (!r.samplerAddsToForward)
        add(tokens * m.hidden.value * 2 + 2 * rows * m.hidden.value * 2, "hidden states");
    if (r.moeWorkspaceKept)
        add(moeWorkspace(m, d, tokens), "MoE workspace");
    if (r.tritonTopKTopP) {
        const std::int64_t sms = smCount(gpu);
        std::int64_t programs = 1;
        while (programs < std::min(sms, rows))
            programs *= 2;
        add(std::min(programs, sms) * m.vocab.value * 4, "top-k/top-p buffer");
    }
    return h;
}

/// Held through the whole profiling pass: the cuBLAS workspace, and for a multimodal model the
/// dummy encoder outputs profile_run caches (gpu_model_runner.py: encoder_cache["tmp"]) until the
/// language model's pass is done — at most the encoder budget, max_num_batched_tokens tokens of
/// hidden-size 16-bit embeddings.
std::int64_t profileHeld(const ModelSpec& m, const Deployment& d, const GpuSpec& gpu) {
    const std::int64_t encoder =
        m.weights.visionParams > 0 ? d.maxNumBatchedTokens * m.hidden.value * 2 : 0;
    return cublasWorkspace(gpu) + encoder;
}

/// The activation peak of the last stage (the one that samples) or of any other stage.
std::int64_t activationPeak(const ModelSpec& m, const Deployment& d, const VllmRules& r,
                            const GpuSpec& gpu, std::int64_t rows, bool samples,
                            std::string& rule) {
    const std::int64_t tokens = d.maxNumBatchedTokens;
    const std::int64_t forward = forwardPeak(m, d, tokens);
    const std::int64_t always = profileHeld(m, d, gpu);
    const std::string alwaysText =
        " + " + gibText(always) +
        (m.weights.visionParams > 0 ? " (cuBLAS workspace, encoder cache)" : " (cuBLAS workspace)");
    if (!samples) {
        rule = "forward " + gibText(forward) + alwaysText;
        return forward + always;
    }
    const std::int64_t samplerRows = r.samplerOnEveryToken ? tokens : rows;
    const std::int64_t sampler = samplerRows * m.vocab.value * r.samplerBytesPerLogit;
    const SamplerHeld held = samplerHeld(m, d, r, gpu, rows);
    rule = withCommas(samplerRows) + " rows × vocab " + withCommas(m.vocab.value) + " × " +
           std::to_string(r.samplerBytesPerLogit) + " B = " + gibText(sampler);
    if (held.bytes > 0)
        rule += " + held " + gibText(held.bytes) + " (" + held.what + ")";
    if (r.samplerAddsToForward) {
        rule += " + forward " + gibText(forward) + alwaysText;
        return forward + sampler + held.bytes + always;
    }
    rule = "max(forward " + gibText(forward) + ", " + rule + ")" + alwaysText;
    return std::max(forward, sampler + held.bytes) + always;
}

std::int64_t cudaGraphEstimate(const ModelSpec& m, const VllmRules& r) {
    // gpu_model_runner.py logs, per mode, "Estimated PIECEWISE CUDA graph memory: A
    // first-capture + (n-1) × B per-graph", and a total in which the graph pool is shared: the
    // largest first capture once, plus every later graph of every mode (0.19 logs: Qwen2.5-7B
    // 228 + 50 × 4 + 50 × 4 MiB = 0.61 GiB; gemma-3-27b 172 + 50 × 12 + 50 × 6 MiB = 1.05 GiB).
    // First capture: 228 MiB with a FULL mode, 118 MiB PIECEWISE alone (medians of 14 logs).
    // Per graph: a PIECEWISE graph is split at every attention layer, about 0.2 MiB per layer
    // (4 MiB at 28 layers, 12 MiB at 62); a FULL graph about 6 MiB (median).
    const std::int64_t n = r.graphSizes - 1;
    const std::int64_t piecewise = m.layers.value * kMiB / 5;
    if (r.graphModes > 1)
        return 228 * kMiB + n * (piecewise + 6 * kMiB);
    return 118 * kMiB + n * piecewise;
}

/// The subtracted terms and the pool, in the order the worker takes them off the budget.
void addStageTerms(PoolBreakdown& p, const Deployment& d, const VllmRules& rules,
                   const std::string& activationRule) {
    addTerm(p, "weights", d.pp > 1 ? "weights of the limiting stage / TP" : "weights / TP",
            p.weightBytes, true, gibText(p.weightBytes),
            "parameter count × bytes per parameter / TP (core/model/params.cpp)");
    addTerm(p, "activation", "activation peak", p.activationPeakBytes, true, activationRule,
            "vLLM " + rules.range + ": " + rules.samplerSource);
    addTerm(p, "non_torch", "non-torch memory",
            p.cudaContextBytes + p.ncclBytes + p.customAllReduceBytes, true,
            gibText(p.cudaContextBytes) +
                (p.ncclBytes
                     ? " + NCCL and all-reduce " + gibText(p.ncclBytes + p.customAllReduceBytes)
                     : std::string()),
            rules.nonTorchSource);
    addTerm(p, "cuda_graphs", "CUDA graphs", p.cudaGraphEstimateBytes, rules.graphsSubtracted,
            std::to_string(rules.graphModes) + " mode(s) × " + std::to_string(rules.graphSizes) +
                " sizes" + (rules.graphsSubtracted ? "" : "; not subtracted before 0.21"),
            rules.graphSource);
    addTerm(p, "pool", d.pp > 1 ? "KV pool of the limiting stage" : "KV pool", p.stagePoolBytes,
            false, "budget − the subtracted terms",
            d.pp > 1 ? "stage " + std::to_string(p.limitingStage) + " of " + std::to_string(d.pp) +
                           " (" + std::to_string(p.stageLayers) +
                           " layers); vLLM keeps the smallest stage's blocks"
                     : "gpu_worker.py: Available KV cache memory");
}

} // namespace

std::int64_t vllmDefaultMaxNumSeqs(const GpuSpec& gpu) {
    const bool big = static_cast<double>(gpu.reportedMemoryBytes()) >= 70.0 * kGiB;
    return big && lowerId(gpu).find("a100") == std::string::npos ? 1024 : 256;
}

std::int64_t vllmDefaultMaxNumBatchedTokens(const GpuSpec& gpu) {
    return vllmDefaultMaxNumSeqs(gpu) == 1024 ? 8192 : 2048;
}

std::vector<std::int64_t> pipelineStageLayers(std::int64_t layers, std::int64_t pp) {
    std::vector<std::int64_t> out(static_cast<std::size_t>(std::max<std::int64_t>(1, pp)),
                                  layers / std::max<std::int64_t>(1, pp));
    const std::int64_t extra = layers % std::max<std::int64_t>(1, pp);
    for (std::int64_t i = 2; i < extra + 2; ++i)
        out[out.size() - static_cast<std::size_t>(i)] += 1;
    return out;
}

PoolBreakdown vllmPool(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                       std::int64_t weightBytesPerRank) {
    VllmRules rules = rulesFor(d.engine);
    // gpt-oss raises max_cudagraph_capture_size from 512 to 1024
    // (vllm/model_executor/models/config.py GptOssForCausalLMConfig): 1, 2, 4, every 8 up to 256,
    // every 16 up to 1024 = 83 sizes ("'max_cudagraph_capture_size': 1024" and "(83-1) ×
    // per-graph" in the 0.19 gpt-oss-20b log).
    if (m.modelType == "gpt_oss" && d.engine.atLeast(0, 11)) {
        rules.graphSizes = 83;
        rules.graphSource += "; gpt-oss: 83 sizes up to 1024 (models/config.py)";
    }
    PoolBreakdown p;
    p.model = PoolModel::Vllm;
    p.engine = d.engine;
    p.util = d.gpuMemUtil;
    p.pp = d.pp;
    p.capacityBytes = gpu.reportedMemoryBytes();
    p.capacitySource =
        gpu.driverMemoryBytes > 0 ? gpu.driverMemorySource : "datasheet (driver figure unknown)";
    // "Requested memory: 0.950000 (util), 75.23 GiB": util × total_memory (gpu_worker.py).
    p.budgetBytes = static_cast<std::int64_t>(d.gpuMemUtil * static_cast<double>(p.capacityBytes));
    addTerm(p, "budget", "util × driver-reported memory", p.budgetBytes, false,
            fixed(d.gpuMemUtil, 2) + " × " + gibText(p.capacityBytes),
            "gpu_worker.py requested_memory; default util " +
                fixed(defaultGpuMemUtil(d.engine), 2) + " for " + d.engine.text());
    p.maxNumSeqs = std::min(vllmDefaultMaxNumSeqs(gpu), d.maxNumBatchedTokens);

    p.cudaContextBytes = rules.nonTorchTp1;
    if (d.tp * d.pp > 1) {
        // Custom all-reduce runs for TP 2, 4, 6, 8 only (distributed/device_communicators/
        // custom_all_reduce.py, _SUPPORTED_WORLD_SIZES): an 8 MiB IPC buffer plus 8 MiB of
        // metadata and registered pointers per rank; NCCL holds the rest of the collectives.
        if (d.tp <= 8 && d.tp % 2 == 0)
            p.customAllReduceBytes = 16 * kMiB;
        p.ncclBytes = rules.collectiveBuffers - p.customAllReduceBytes;
    }
    p.cudaGraphEstimateBytes = cudaGraphEstimate(m, rules);
    p.cudaGraphBytes = rules.graphsSubtracted ? p.cudaGraphEstimateBytes : 0;

    // Every stage sizes its own pool; the engine keeps the smallest number of blocks.
    const std::vector<std::int64_t> layers = pipelineStageLayers(m.layers.value, d.pp);
    std::string lastRule, otherRule;
    Stage limiting;
    double limitingTokensPerLayerByte = -1;
    for (std::int64_t s = 0; s < d.pp; ++s) {
        Stage st;
        st.layers = layers[static_cast<std::size_t>(s)];
        st.weights = stageWeights(m, weightBytesPerRank, s, d.pp, st.layers);
        const bool samples = s == d.pp - 1;
        st.activation =
            activationPeak(m, d, rules, gpu, p.maxNumSeqs, samples, samples ? lastRule : otherRule);
        st.pool = p.budgetBytes - st.weights - st.activation - p.nonTorchBytes();
        const double perLayer = static_cast<double>(st.pool) / static_cast<double>(st.layers);
        if (limitingTokensPerLayerByte < 0 || perLayer < limitingTokensPerLayerByte) {
            limitingTokensPerLayerByte = perLayer;
            limiting = st;
            p.limitingStage = s;
        }
    }
    p.stageLayers = limiting.layers;
    p.stagePoolBytes = limiting.pool;
    p.weightBytes = limiting.weights;
    p.activationPeakBytes = limiting.activation;
    p.poolBytes = d.pp == 1 ? limiting.pool
                            : std::llround(static_cast<double>(limiting.pool) *
                                           static_cast<double>(m.layers.value) /
                                           static_cast<double>(limiting.layers));

    addStageTerms(p, d, rules, p.limitingStage == d.pp - 1 ? lastRule : otherRule);
    return p;
}

} // namespace kvscope
