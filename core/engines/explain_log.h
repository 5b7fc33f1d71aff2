// Explain an engine's startup log: read what a vLLM or SGLang log says about the model, TP,
// memory and the KV pool; predict the same numbers with core for the logged engine release;
// explain the difference term by term (budget, weights, activation peak, non-torch memory, CUDA
// graphs, pool, cell, block rounding). Pieces: log_parse.cpp (the pattern table), log_scan.cpp
// (the line scanning it is written in), log_models.cpp (logged name → preset), explain_log.cpp
// (the explanation and the fleet), explain_render.cpp (text and JSON).
#pragma once

#include "core/engines/engine.h"
#include "core/features/session.h"
#include "core/law/law.h"
#include "core/model/gpu.h"
#include "core/model/model.h"
#include "core/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope {

enum class LogEngine { Vllm, Sglang };
std::string toString(LogEngine e);

/// What a startup log states. Every memory figure is in bytes (vLLM's "GiB" and SGLang's "GB"
/// are both 2^30 bytes: SGLang divides by 1 << 30 and prints "GB").
struct EngineLog {
    LogEngine engine = LogEngine::Vllm;
    std::optional<EngineVersion> version; ///< "Initializing a V1 LLM engine (v0.19.0)"
    bool v0 = false;                      ///< V0 engine lines ("# GPU blocks", "cuda blocks")
    std::string model;                    ///< as logged (repo id or path)
    std::optional<std::int64_t> tp;
    std::optional<std::int64_t> pp;
    std::optional<std::int64_t> dcp;
    std::optional<double> memUtil;           ///< gpu_memory_utilization / mem_fraction_static
    std::optional<std::string> kvCacheDtype; ///< "auto", "fp8", "fp8_e4m3", ...
    std::optional<std::string> dtype;        ///< "torch.bfloat16", "bfloat16", "auto"
    std::optional<std::string> quantization; ///< "fp8", "None", ...
    /// The quantized linear method vLLM picked: "CompressedTensorsW8A8Fp8" ("Selected
    /// CutlassFP8ScaledMMLinearKernel for CompressedTensorsW8A8Fp8"), "GPTQMarlinLinearMethod".
    std::optional<std::string> linearMethod;
    std::optional<std::int64_t> maxModelLen; ///< vLLM max_seq_len / SGLang context_len
    std::optional<std::int64_t> maxNumBatchedTokens;
    std::optional<std::int64_t> blockSize;

    // vLLM
    std::optional<std::int64_t> totalGpuMemoryBytes; ///< "total_memory=79.19GiB"
    std::optional<std::int64_t> requestedBytes;      ///< "Requested memory: 0.95 (util), 75.23 GiB"
    std::optional<std::int64_t> initialFreeBytes;    ///< "Initial free memory: 78.68 GiB"
    std::optional<std::int64_t> weightBytes;         ///< "Model loading took 16.43 GiB"
    std::optional<std::int64_t> nonKvBytes;          ///< "Total non KV cache memory: 16.7GiB"
    std::optional<std::int64_t> nonTorchBytes;       ///< profiling line, when logged
    std::optional<std::int64_t> activationPeakBytes; ///< profiling line, when logged
    std::optional<std::int64_t> cudaGraphEstimateBytes; ///< "Estimated CUDA graph memory: X GiB"
    std::optional<std::int64_t> cudaGraphBytes;         ///< "Graph capturing finished ..., took"
    std::optional<std::int64_t> availableKvBytes;       ///< "Available KV cache memory"
    std::optional<std::int64_t> kvTokens;     ///< "GPU KV cache size: N tokens" / SGLang #tokens
    std::optional<std::int64_t> numGpuBlocks; ///< "# GPU blocks: N" (older vLLM)
    std::optional<std::int64_t> concurrencyTokens; ///< "Maximum concurrency for S tokens"
    std::optional<double> concurrency;             ///< "... per request: 162.01x"

    // SGLang
    std::optional<std::int64_t> availBeforeWeightsBytes; ///< "Load weight begin. avail mem="
    std::optional<std::int64_t> availAfterWeightsBytes;  ///< "Load weight end. ... avail mem="
    std::optional<std::int64_t> availAfterPoolBytes;     ///< "Memory pool end. avail mem="
    std::optional<std::int64_t> kSizeBytes, vSizeBytes;  ///< "K size: .. GB, V size: .. GB"
    std::optional<std::int64_t> latentSizeBytes;         ///< MLA: "KV size: .. GB"
    std::optional<std::int64_t> maxTotalNumTokens;       ///< "max_total_num_tokens="
    std::optional<std::int64_t> maxRunningRequests;

    /// The engine's own error when it refused the run before sizing a pool ("AssertionError:
    /// 151936 is not divisible by 5"), with its line number.
    std::optional<std::string> refusal;
    std::size_t refusalLine = 0;

    /// "line 12: tensor_parallel_size" for each figure read, in order.
    std::vector<std::string> readLines;

    /// The engine and release the log comes from (the newest modelled one when not logged).
    EngineSpec engineSpec() const;
};

/// Reads a vLLM or SGLang startup log (lines wrapped at a fixed width are joined). Error when
/// neither engine's lines are there (naming the first line it could not place), or when no
/// model name is found. Never throws; lines of any length are fine.
Result<EngineLog> parseEngineLog(std::string_view text);
Result<EngineLog> loadEngineLog(const std::string& path);

/// The preset id (or local path / Hugging Face cache config) a logged model name maps to:
/// "meta-llama/Meta-Llama-3-70B-Instruct" → "llama-3-70b". Error when nothing matches: it says
/// which --model would resolve it.
Result<std::string> matchModelName(const std::string& loggedName);
/// The same, also looking in folders of `org__Name.json` configs (by repo id, then base name).
Result<std::string> matchModelName(const std::string& loggedName,
                                   const std::vector<std::string>& configDirs);

/// One term of the explanation. `logged` is absent when the log does not state it (then
/// `inferred` may hold what the other logged numbers imply).
struct ExplainTerm {
    std::string key;   ///< "budget", "weights", "activation", "pool", "cell", "tokens", ...
    std::string label; ///< "util × GPU memory"
    std::string unit;  ///< "B", "tokens", "x"
    double predicted = 0;
    std::optional<double> logged;
    bool inferred = false; ///< `logged` derived from other logged numbers, not printed as such
    std::string explanation;
};

struct LogExplanation {
    EngineLog log;
    std::string modelRef; ///< what the model name matched
    Scenario scenario;    ///< the deployment kvscope predicted
    Report report;
    std::vector<ExplainTerm> terms;
    std::vector<std::string> notes; ///< assumptions (GPU inferred, util defaulted, ...)
    /// What the prediction borrowed from the log or cannot model yet: "quantized weights:
    /// logged weights used", "hybrid attention".
    std::vector<std::string> marks;
    bool usedLoggedWeights = false;
    std::optional<double> tokensError; ///< (predicted − logged) / logged
    std::string mainTerm;              ///< the term that explains most of the gap
    bool smallPool = false;            ///< pool under 10% of the budget: reported apart
    std::string summary;               ///< one line: predicted vs logged tokens and the main cause
};

struct ExplainOptions {
    std::string model; ///< overrides the logged model name (preset id or path)
    std::string gpu;   ///< GPU preset id or path; empty: inferred from the logged memory
    /// Use the logged weights in place of kvscope's count: automatic for quantized checkpoints
    /// (the logged quantization is not None), forced by this flag.
    bool loggedWeights = false;
    std::vector<std::string> configDirs; ///< folders of `org__Name.json` model configs
    /// The log's file name: a GPU preset id in it ("…A10080GB…" → a100) names the GPU when the
    /// log states no memory size.
    std::string fileName;
};

/// A log the engine refused (EngineLog::refusal) comes back as an Error naming the engine's
/// message and, where kvscope's own rules refuse the same deployment, kvscope's reason too.
Result<LogExplanation> explainEngineLog(const EngineLog& log, const ExplainOptions& options = {});

std::string explanationText(const LogExplanation& e);
std::string explanationJson(const LogExplanation& e);

/// One row of `explain-log DIR`: a log explained, or why not.
struct FleetRow {
    std::string file;
    Result<LogExplanation> explanation = Error{};
};
/// Every *.log in a folder (sorted by name; subfolders too), each explained or its error kept.
Result<std::vector<FleetRow>> explainFolder(const std::string& dir,
                                            const ExplainOptions& options = {});
/// The median and worst |tokens error| over the rows that have one (small pools apart).
struct FleetStats {
    std::size_t explained = 0, failed = 0, smallPools = 0;
    double medianAbsError = 0, worstAbsError = 0;
    std::string worstFile;
};
/// denseOnly: leave out the rows marked hybrid (their cache needs per-layer-kind groups).
FleetStats fleetStats(const std::vector<FleetRow>& rows, bool denseOnly = false);
std::string fleetText(const std::vector<FleetRow>& rows);
std::string fleetJson(const std::vector<FleetRow>& rows);

} // namespace kvscope
