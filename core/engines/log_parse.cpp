// Reading an engine startup log: a table of the lines vLLM (V0, V1) and SGLang print while they
// size the KV cache, each with what it yields. Lines wrapped at a fixed width (as some
// launchers commit them) are joined first; the scanning inside a line is log_scan.cpp's.
#include "core/engines/explain_log.h"
#include "core/engines/log_scan.h"
#include "core/jsonutil.h"

#include <cctype>

namespace kvscope {

namespace {

using logscan::after;
using logscan::identChar;
using logscan::intAt;
using logscan::keyInt;
using logscan::keyReal;
using logscan::keyValue;
using logscan::memoryAt;
using logscan::numberAt;
using logscan::quoted;
using logscan::splitJoined;

constexpr std::size_t kMaxLogBytes = 64 * 1024 * 1024;

/// What the reader has seen so far.
struct ParseState {
    EngineLog log;
    bool vllm = false, sglang = false;
    std::size_t lineNo = 0;
    std::size_t firstUnplaced = 0;
    std::string firstUnplacedText;
    void read(const std::string& what) {
        log.readLines.push_back("line " + std::to_string(lineNo) + ": " + what);
    }
    template <class T>
    void once(std::optional<T>& slot, const std::optional<T>& v, const std::string& what) {
        if (slot || !v)
            return;
        slot = v;
        read(what);
    }
};

/// The engine-config lines of vLLM ("Initializing a V1 LLM engine (v0.19.0) with config:
/// model='…', …", "non-default args: {'model': …}").
void vllmConfig(ParseState& st, std::string_view line, std::size_t) {
    EngineLog& log = st.log;
    if (log.model.empty()) {
        auto m = keyValue(line, "model");
        if (!m)
            m = keyValue(line, "model_tag");
        if (m && !m->empty()) {
            log.model = *m;
            st.read("model " + *m);
        }
    }
    st.once(log.tp, keyInt(line, "tensor_parallel_size"), "tensor_parallel_size");
    st.once(log.pp, keyInt(line, "pipeline_parallel_size"), "pipeline_parallel_size");
    st.once(log.dcp, keyInt(line, "decode_context_parallel_size"), "decode_context_parallel_size");
    st.once(log.maxModelLen, keyInt(line, "max_seq_len"), "max_seq_len");
    st.once(log.maxModelLen, keyInt(line, "max_model_len"), "max_model_len");
    st.once(log.kvCacheDtype, keyValue(line, "kv_cache_dtype"), "kv_cache_dtype");
    st.once(log.dtype, keyValue(line, "dtype"), "dtype");
    st.once(log.quantization, keyValue(line, "quantization"), "quantization");
    st.once(log.memUtil, keyReal(line, "gpu_memory_utilization"), "gpu_memory_utilization");
    st.once(log.maxNumBatchedTokens, keyInt(line, "max_num_batched_tokens"),
            "max_num_batched_tokens");
    st.once(log.blockSize, keyInt(line, "block_size"), "block_size");
}

void vllmVersion(ParseState& st, std::string_view line, std::size_t at) {
    if (st.log.version)
        return;
    auto v = parseEngineVersion(line.substr(at, 24));
    if (v.ok()) {
        st.log.version = v.value();
        st.read("vLLM version " + v->text());
    }
}

void v0Marker(ParseState& st, std::string_view, std::size_t) {
    st.log.v0 = true;
}

/// V0's "the current vLLM instance can use total_gpu_memory (79.19GiB) x
/// gpu_memory_utilization (0.90) = 71.27GiB; model weights take 14.99GiB; non_torch_memory
/// takes 0.13GiB; PyTorch activation peak memory takes 4.76GiB; the rest of the memory reserved
/// for KV Cache is 51.38GiB."
void v0Profile(ParseState& st, std::string_view line, std::size_t at) {
    EngineLog& log = st.log;
    if (auto t = after(line, "total_gpu_memory ("))
        st.once(log.totalGpuMemoryBytes, memoryAt(line, *t), "total_gpu_memory");
    (void)at;
    if (auto u = after(line, "gpu_memory_utilization ("))
        st.once(log.memUtil, numberAt(line, *u), "gpu_memory_utilization");
    if (auto q = after(line, "model weights take"))
        st.once(log.weightBytes, memoryAt(line, *q), "model weights");
    if (auto q = after(line, "non_torch_memory takes"))
        st.once(log.nonTorchBytes, memoryAt(line, *q), "non_torch_memory");
    if (auto q = after(line, "activation peak memory takes"))
        st.once(log.activationPeakBytes, memoryAt(line, *q), "activation peak");
    if (auto q = after(line, "reserved for KV Cache is"))
        st.once(log.availableKvBytes, memoryAt(line, *q), "KV cache memory");
}

/// V1's DEBUG "Memory profiling takes 4.19 seconds. Total non KV cache memory: 16.7GiB; torch
/// peak memory increase: 2.21GiB; non-torch forward increase memory: 0.24GiB; weights memory:
/// 14.25GiB."
void v1Profile(ParseState& st, std::string_view line, std::size_t) {
    EngineLog& log = st.log;
    if (auto q = after(line, "Total non KV cache memory:"))
        st.once(log.nonKvBytes, memoryAt(line, *q), "total non KV cache memory");
    if (auto q = after(line, "torch peak memory increase:"))
        st.once(log.activationPeakBytes, memoryAt(line, *q), "torch peak memory increase");
    if (auto q = after(line, "non-torch forward increase memory:"))
        st.once(log.nonTorchBytes, memoryAt(line, *q), "non-torch forward increase");
    if (auto q = after(line, "weights memory:"))
        st.once(log.weightBytes, memoryAt(line, *q), "weights memory");
}

/// "Initial free memory: 78.68 GiB; Requested memory: 0.950000 (util), 75.23 GiB"
void v1Requested(ParseState& st, std::string_view line, std::size_t at) {
    EngineLog& log = st.log;
    st.once(log.initialFreeBytes, memoryAt(line, at), "initial free memory");
    if (auto q = after(line, "Requested memory:")) {
        st.once(log.memUtil, numberAt(line, *q), "gpu_memory_utilization");
        if (auto c = line.find(',', *q); c != std::string_view::npos)
            st.once(log.requestedBytes, memoryAt(line, c + 1), "requested memory");
    }
}

void setMemory(ParseState& st, std::optional<std::int64_t>& slot, std::string_view line,
               std::size_t at, const char* what) {
    st.once(slot, memoryAt(line, at), what);
}

/// The first root-cause exception a refused run prints ("AssertionError: 151936 is not
/// divisible by 5"; pydantic's "Value error, The checkpoint you are trying to load has model
/// type `gemma4` …"), not the engine's "initialization failed. See root cause above".
void errorLine(ParseState& st, std::string_view line, std::size_t) {
    if (line.find("See root cause") != std::string_view::npos ||
        line.find("initialization failed") != std::string_view::npos)
        return;
    std::size_t p = line.find("Value error, ");
    std::size_t skip = 13;
    if (p == std::string_view::npos) {
        const std::size_t e = line.find("Error: ");
        if (e == std::string_view::npos)
            return;
        p = e;
        while (p > 0 && std::isalnum(static_cast<unsigned char>(line[p - 1])))
            --p;
        if (p == e || !std::isupper(static_cast<unsigned char>(line[p])))
            return;
        skip = 0;
    }
    std::string msg(line.substr(p + skip));
    if (msg.size() > 300)
        msg = msg.substr(0, 300) + "…";
    // A pydantic ValidationError heading is replaced by its "Value error," detail.
    if (st.log.refusal && st.log.refusal->find("validation error") != std::string::npos &&
        skip == 13 && st.lineNo <= st.log.refusalLine + 3) {
        st.log.refusal = msg;
        return;
    }
    if (!st.log.refusal) {
        st.log.refusal = msg;
        st.log.refusalLine = st.lineNo;
    }
}

using Apply = void (*)(ParseState&, std::string_view, std::size_t);
enum class Marks { Vllm, Sglang, None };

struct Pattern {
    std::string_view needle;
    Marks marks;
    Apply apply;
};

// vLLM ---------------------------------------------------------------------------------------
void chunked(ParseState& st, std::string_view l, std::size_t at) {
    st.once(st.log.maxNumBatchedTokens, intAt(l, at), "max_num_batched_tokens");
}
void weights(ParseState& st, std::string_view l, std::size_t at) {
    setMemory(st, st.log.weightBytes, l, at, "model loading (weights)");
}
void totalMemory(ParseState& st, std::string_view l, std::size_t at) {
    setMemory(st, st.log.totalGpuMemoryBytes, l, at, "total_memory");
}
void workerRequested(ParseState& st, std::string_view l, std::size_t at) {
    setMemory(st, st.log.requestedBytes, l, at, "requested memory");
}
void availableKv(ParseState& st, std::string_view l, std::size_t at) {
    setMemory(st, st.log.availableKvBytes, l, at, "available KV cache memory");
}
void kvTokens(ParseState& st, std::string_view l, std::size_t at) {
    st.once(st.log.kvTokens, intAt(l, at), "GPU KV cache size (tokens)");
}
void gpuBlocks(ParseState& st, std::string_view l, std::size_t at) {
    st.once(st.log.numGpuBlocks, intAt(l, at), "GPU blocks");
}
void concurrency(ParseState& st, std::string_view l, std::size_t at) {
    st.once(st.log.concurrencyTokens, intAt(l, at), "tokens per request");
    if (auto q = after(l, "tokens per request:"))
        st.once(st.log.concurrency, numberAt(l, *q), "maximum concurrency");
}
/// "Selected CutlassFP8ScaledMMLinearKernel for CompressedTensorsW8A8Fp8", "Using
/// MacheteLinearKernel for GPTQMarlinLinearMethod" (vLLM model_executor/layers/quantization):
/// the identifier after "Kernel for ".
void linearMethod(ParseState& st, std::string_view l, std::size_t) {
    const std::size_t k = l.find("Kernel for ");
    if (k == std::string_view::npos)
        return;
    const std::size_t at = k + 11;
    std::size_t end = at;
    while (end < l.size() && identChar(l[end]))
        ++end;
    if (end > at)
        st.once(st.log.linearMethod,
                std::optional<std::string>(std::string(l.substr(at, end - at))),
                "quantized linear method");
}
void graphEstimate(ParseState& st, std::string_view l, std::size_t at) {
    setMemory(st, st.log.cudaGraphEstimateBytes, l, at, "estimated CUDA graph memory");
}
void graphCaptured(ParseState& st, std::string_view l, std::size_t) {
    if (auto p = after(l, "took"))
        setMemory(st, st.log.cudaGraphBytes, l, *p, "CUDA graphs captured");
}

// SGLang -------------------------------------------------------------------------------------
void sglangArgs(ParseState& st, std::string_view line, std::size_t) {
    EngineLog& log = st.log;
    if (log.model.empty())
        if (auto m = keyValue(line, "model_path"); m && !m->empty()) {
            log.model = *m;
            st.read("model_path " + *m);
        }
    st.once(log.tp, keyInt(line, "tp_size"), "tp_size");
    st.once(log.pp, keyInt(line, "pp_size"), "pp_size");
    st.once(log.dcp, keyInt(line, "dcp_size"), "dcp_size");
    st.once(log.memUtil, keyReal(line, "mem_fraction_static"), "mem_fraction_static");
    st.once(log.kvCacheDtype, keyValue(line, "kv_cache_dtype"), "kv_cache_dtype");
    st.once(log.dtype, keyValue(line, "dtype"), "dtype");
    st.once(log.quantization, keyValue(line, "quantization"), "quantization");
    st.once(log.maxModelLen, keyInt(line, "context_length"), "context_length");
    st.once(log.maxNumBatchedTokens, keyInt(line, "chunked_prefill_size"), "chunked_prefill_size");
    st.once(log.blockSize, keyInt(line, "page_size"), "page_size");
}
void sglangVersion(ParseState& st, std::string_view line, std::size_t at) {
    if (st.log.version)
        return;
    if (auto v = parseEngineVersion(line.substr(at, 24)); v.ok()) {
        st.log.version = v.value();
        st.read("SGLang version " + v->text());
    }
}
void loadBegin(ParseState& st, std::string_view l, std::size_t) {
    if (auto p = after(l, "avail mem="))
        setMemory(st, st.log.availBeforeWeightsBytes, l, *p, "avail mem before weights");
}
void loadEnd(ParseState& st, std::string_view l, std::size_t) {
    if (auto p = after(l, "avail mem="))
        setMemory(st, st.log.availAfterWeightsBytes, l, *p, "avail mem after weights");
    if (auto p = after(l, "mem usage="))
        setMemory(st, st.log.weightBytes, l, *p, "weights (mem usage)");
}
void kvAllocated(ParseState& st, std::string_view l, std::size_t) {
    if (auto p = after(l, "#tokens:"))
        st.once(st.log.kvTokens, intAt(l, *p), "#tokens");
    if (auto p = after(l, "K size:"))
        setMemory(st, st.log.kSizeBytes, l, *p, "K size");
    if (auto p = after(l, "V size:"))
        setMemory(st, st.log.vSizeBytes, l, *p, "V size");
    if (auto p = after(l, "KV size:"))
        setMemory(st, st.log.latentSizeBytes, l, *p, "KV size");
}
void poolEnd(ParseState& st, std::string_view l, std::size_t) {
    if (auto p = after(l, "avail mem="))
        setMemory(st, st.log.availAfterPoolBytes, l, *p, "avail mem after the memory pool");
}
void maxTotal(ParseState& st, std::string_view l, std::size_t at) {
    st.once(st.log.maxTotalNumTokens, intAt(l, at), "max_total_num_tokens");
    st.once(st.log.maxRunningRequests, keyInt(l, "max_running_requests"), "max_running_requests");
    st.once(st.log.maxModelLen, keyInt(l, "context_len"), "context_len");
}

/// Every line kvscope reads, in the order the engines print them.
const Pattern kPatterns[] = {
    {"Initializing a V1 LLM engine", Marks::Vllm, vllmConfig},
    {"Initializing a V0 LLM engine", Marks::Vllm, vllmConfig},
    {"Initializing an LLM engine", Marks::Vllm, vllmConfig},
    {"non-default args:", Marks::Vllm, vllmConfig},
    {"LLM engine (v", Marks::Vllm, vllmVersion},
    {"vLLM API server version", Marks::Vllm, vllmVersion},
    {"Chunked prefill is enabled with max_num_batched_tokens=", Marks::Vllm, chunked},
    {"Model loading took", Marks::Vllm, weights},
    {"Loading model weights took", Marks::Vllm, weights},
    {"total_gpu_memory (", Marks::Vllm, v0Profile},
    {"model weights take", Marks::Vllm, v0Profile},
    {"total_gpu_memory=", Marks::Vllm, totalMemory},
    {"total_memory=", Marks::Vllm, totalMemory},
    {"worker requested memory:", Marks::Vllm, workerRequested},
    {"Initial free memory:", Marks::Vllm, v1Requested},
    {"Memory profiling takes", Marks::Vllm, v1Profile},
    {"Available KV cache memory:", Marks::Vllm, availableKv},
    {"GPU KV cache size:", Marks::Vllm, kvTokens},
    {"# GPU blocks:", Marks::Vllm, gpuBlocks},
    {"# cuda blocks:", Marks::Vllm, gpuBlocks},
    {"# cuda blocks:", Marks::Vllm, v0Marker},
    {"the current vLLM instance can use", Marks::Vllm, v0Marker},
    {"Maximum concurrency for", Marks::Vllm, concurrency},
    {"Estimated CUDA graph memory:", Marks::Vllm, graphEstimate},
    {" for CompressedTensors", Marks::None, linearMethod},
    {" for GPTQ", Marks::None, linearMethod},
    {" for AWQ", Marks::None, linearMethod},
    {"Graph capturing finished", Marks::None, graphCaptured},
    {"server_args=ServerArgs(", Marks::Sglang, sglangArgs},
    {"sglang version", Marks::Sglang, sglangVersion},
    {"Load weight begin.", Marks::Sglang, loadBegin},
    {"Load weight end.", Marks::Sglang, loadEnd},
    {"KV Cache is allocated.", Marks::Sglang, kvAllocated},
    {"Memory pool end.", Marks::Sglang, poolEnd},
    {"max_total_num_tokens=", Marks::Sglang, maxTotal},
    {"Error", Marks::None, errorLine},
};

void readLine(ParseState& st, std::string_view line) {
    bool placed = false;
    for (const Pattern& p : kPatterns) {
        if (p.needle == "Error" && line.find("Error") == std::string_view::npos &&
            line.find("error, ") == std::string_view::npos)
            continue;
        auto at = after(line, p.needle);
        if (!at && p.needle != "Error")
            continue;
        placed = true;
        if (p.marks == Marks::Vllm)
            st.vllm = true;
        else if (p.marks == Marks::Sglang)
            st.sglang = true;
        p.apply(st, line, at.value_or(0));
    }
    if (!placed && st.firstUnplaced == 0 && !line.empty()) {
        st.firstUnplaced = st.lineNo;
        st.firstUnplacedText = quoted(line);
    }
}

} // namespace

std::string toString(LogEngine e) {
    return e == LogEngine::Vllm ? "vllm" : "sglang";
}

EngineSpec EngineLog::engineSpec() const {
    EngineSpec e;
    e.name = engine == LogEngine::Vllm ? EngineName::Vllm : EngineName::Sglang;
    if (version)
        e.version = *version;
    else if (engine == LogEngine::Vllm && v0)
        e.version = EngineVersion{0, 6, 0}; // the V0 engine's lines: last V0 default in 0.7
    else
        e.version = newestModeledVersion(e.name);
    return e;
}

Result<EngineLog> parseEngineLog(std::string_view text) {
    if (text.size() > kMaxLogBytes)
        return makeError("log", "larger than 64 MiB; paste the startup part only");
    if (text.find('\0') != std::string_view::npos)
        return makeError("log", "holds NUL bytes: not a text log");
    ParseState st;
    for (const std::string& line : splitJoined(text)) {
        ++st.lineNo;
        readLine(st, line);
    }
    if (st.vllm && st.sglang)
        return makeError("log", "holds both vLLM and SGLang lines; paste one engine's log");
    if (!st.vllm && !st.sglang) {
        std::string where = st.firstUnplaced
                                ? "line " + std::to_string(st.firstUnplaced) + " ('" +
                                      st.firstUnplacedText + "') is not a vLLM or SGLang line"
                                : "the file is empty";
        return makeError("log", "no vLLM or SGLang startup lines found: " + where +
                                    " (looked for 'Initializing a V1 LLM engine', 'GPU KV cache "
                                    "size', 'server_args=ServerArgs', 'KV Cache is allocated')");
    }
    EngineLog log = std::move(st.log);
    log.engine = st.vllm ? LogEngine::Vllm : LogEngine::Sglang;
    if (log.engine == LogEngine::Sglang && !log.kvTokens && log.maxTotalNumTokens)
        log.kvTokens = log.maxTotalNumTokens;
    if (log.model.empty())
        return makeError("model", "the log names no model (vLLM: \"with config: model='...'\"; "
                                  "SGLang: \"server_args=ServerArgs(model_path='...'\")");
    return log;
}

Result<EngineLog> loadEngineLog(const std::string& path) {
    auto text = readFileBounded(path, "log", kMaxLogBytes);
    if (!text.ok())
        return text.error();
    return parseEngineLog(text.value());
}

} // namespace kvscope
