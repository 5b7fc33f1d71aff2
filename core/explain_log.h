// Explain an engine's startup log: read what a vLLM or SGLang log says about the model, TP,
// memory and the KV pool; predict the same numbers with core; explain the difference term by
// term (memory budget, weights, activations and non-torch memory, pool, cell size, block
// rounding).
#pragma once

#include "core/gpu.h"
#include "core/law.h"
#include "core/model.h"
#include "core/result.h"
#include "core/session.h"

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
    std::string model; ///< as logged (repo id or path)
    std::optional<std::int64_t> tp;
    std::optional<std::int64_t> dcp;
    std::optional<double> memUtil;           ///< gpu_memory_utilization / mem_fraction_static
    std::optional<std::string> kvCacheDtype; ///< "auto", "fp8", "fp8_e4m3", ...
    std::optional<std::string> dtype;        ///< "torch.bfloat16", "bfloat16", "auto"
    std::optional<std::string> quantization; ///< "fp8", "None", ...
    std::optional<std::int64_t> maxModelLen; ///< vLLM max_seq_len / SGLang context_len
    std::optional<std::int64_t> maxNumBatchedTokens;
    std::optional<std::int64_t> blockSize;

    // vLLM
    std::optional<std::int64_t> totalGpuMemoryBytes; ///< "total_gpu_memory (79.19GiB)"
    std::optional<std::int64_t> weightBytes;         ///< "Model loading took 16.43 GiB"
    std::optional<std::int64_t> nonTorchBytes;       ///< profiling line, when logged
    std::optional<std::int64_t> activationPeakBytes; ///< profiling line, when logged
    std::optional<std::int64_t> cudaGraphBytes;      ///< "Graph capturing finished ..., took"
    std::optional<std::int64_t> availableKvBytes;    ///< "Available KV cache memory"
    std::optional<std::int64_t> kvTokens;     ///< "GPU KV cache size: N tokens" / SGLang #tokens
    std::optional<std::int64_t> numGpuBlocks; ///< "# GPU blocks: N" (older vLLM)
    std::optional<std::int64_t> concurrencyTokens; ///< "Maximum concurrency for S tokens"
    std::optional<double> concurrency;             ///< "... per request: 162.01x"

    // SGLang
    std::optional<std::int64_t> availBeforeWeightsBytes; ///< "Load weight begin. avail mem="
    std::optional<std::int64_t> availAfterWeightsBytes;  ///< "Load weight end. ... avail mem="
    std::optional<std::int64_t> kSizeBytes, vSizeBytes;  ///< "K size: .. GB, V size: .. GB"
    std::optional<std::int64_t> latentSizeBytes;         ///< MLA: "KV size: .. GB"
    std::optional<std::int64_t> maxTotalNumTokens;       ///< "max_total_num_tokens="
    std::optional<std::int64_t> maxRunningRequests;

    /// "line 12: tensor_parallel_size=8" for each figure read, in order.
    std::vector<std::string> readLines;
};

/// Reads a vLLM or SGLang startup log. Error when neither engine's lines are there, or when
/// no model name is found. Never throws; lines of any length are fine.
Result<EngineLog> parseEngineLog(std::string_view text);
Result<EngineLog> loadEngineLog(const std::string& path);

/// The preset id (or local path / Hugging Face cache config) a logged model name maps to:
/// "meta-llama/Meta-Llama-3-70B-Instruct" → "llama-3-70b". Error when nothing matches.
Result<std::string> matchModelName(const std::string& loggedName);

/// One term of the explanation. `logged` is absent when the log does not state it (then
/// `inferred` may hold what the other logged numbers imply).
struct ExplainTerm {
    std::string key;   ///< "budget", "weights", "overhead", "pool", "cell", "tokens", ...
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
    std::string summary;            ///< one line: predicted vs logged tokens and the main cause
};

struct ExplainOptions {
    std::string model; ///< overrides the logged model name (preset id or path)
    std::string gpu;   ///< GPU preset id or path; empty: inferred from the logged memory
};

Result<LogExplanation> explainEngineLog(const EngineLog& log, const ExplainOptions& options = {});

std::string explanationText(const LogExplanation& e);
std::string explanationJson(const LogExplanation& e);

} // namespace kvscope
