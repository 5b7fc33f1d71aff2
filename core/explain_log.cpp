#include "core/explain_log.h"

#include "core/format.h"
#include "core/jsonutil.h"
#include "core/presets.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kvscope {

using nlohmann::json;

namespace {

constexpr double kGiB = 1073741824.0;
constexpr std::size_t kMaxLogBytes = 64 * 1024 * 1024;

bool identChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

/// Position just past `key` in `line` where the key is not the tail of a longer identifier.
std::optional<std::size_t> after(std::string_view line, std::string_view key) {
    std::size_t from = 0;
    while (true) {
        const std::size_t p = line.find(key, from);
        if (p == std::string_view::npos)
            return std::nullopt;
        if (p == 0 || !identChar(key.front()) || !identChar(line[p - 1]))
            return p + key.size();
        from = p + 1;
    }
}

/// A number at `pos` (spaces skipped), with thousands separators allowed: "1,327,136", "0.9".
std::optional<double> numberAt(std::string_view s, std::size_t pos) {
    while (pos < s.size() && s[pos] == ' ')
        ++pos;
    std::string digits;
    bool seenDigit = false;
    for (; pos < s.size(); ++pos) {
        const char c = s[pos];
        if (std::isdigit(static_cast<unsigned char>(c))) {
            digits += c;
            seenDigit = true;
        } else if (c == '.' && seenDigit && digits.find('.') == std::string::npos) {
            digits += c;
        } else if (c == ',' && seenDigit && pos + 3 < s.size() + 0 &&
                   std::isdigit(static_cast<unsigned char>(s[pos + 1])) &&
                   std::isdigit(static_cast<unsigned char>(s[pos + 2])) &&
                   std::isdigit(static_cast<unsigned char>(s[pos + 3])) &&
                   (pos + 4 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[pos + 4])))) {
            continue; // thousands separator
        } else {
            break;
        }
    }
    if (!seenDigit)
        return std::nullopt;
    if (digits.back() == '.')
        digits.pop_back();
    try {
        return std::stod(digits);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

/// Bytes from "<number> GiB" / "<number>GB" / "<number> MiB" at `pos`.
std::optional<std::int64_t> memoryAt(std::string_view s, std::size_t pos) {
    auto v = numberAt(s, pos);
    if (!v)
        return std::nullopt;
    while (pos < s.size() && (s[pos] == ' '))
        ++pos;
    while (pos < s.size() &&
           (std::isdigit(static_cast<unsigned char>(s[pos])) || s[pos] == '.' || s[pos] == ','))
        ++pos;
    while (pos < s.size() && s[pos] == ' ')
        ++pos;
    double scale = kGiB; // vLLM's and SGLang's "GB" are 2^30 bytes
    if (s.substr(pos, 3) == "MiB" || s.substr(pos, 2) == "MB")
        scale = 1048576.0;
    else if (s.substr(pos, 3) == "KiB" || s.substr(pos, 2) == "KB")
        scale = 1024.0;
    return static_cast<std::int64_t>(std::llround(*v * scale));
}

/// The value of `name=value` or `'name': value` (quotes stripped), up to , ) } or space.
std::optional<std::string> keyValue(std::string_view line, std::string_view name) {
    // Built by appending: "'" + std::string(...) draws a false -Wrestrict from GCC 12 at -O3.
    auto key = [name](std::string_view open, std::string_view close) {
        std::string k(open);
        k += name;
        k += close;
        return k;
    };
    std::optional<std::size_t> p = after(line, key("", "="));
    if (!p)
        p = after(line, key("'", "': "));
    if (!p)
        p = after(line, key("\"", "\": "));
    if (!p)
        return std::nullopt;
    std::size_t i = *p;
    if (i < line.size() && (line[i] == '\'' || line[i] == '"')) {
        const char q = line[i];
        const std::size_t end = line.find(q, i + 1);
        if (end == std::string_view::npos)
            return std::nullopt;
        return std::string(line.substr(i + 1, end - i - 1));
    }
    std::size_t end = i;
    while (end < line.size() && line[end] != ',' && line[end] != ')' && line[end] != '}' &&
           line[end] != ' ')
        ++end;
    if (end == i)
        return std::nullopt;
    return std::string(line.substr(i, end - i));
}

std::optional<std::int64_t> keyInt(std::string_view line, std::string_view name) {
    auto v = keyValue(line, name);
    if (!v)
        return std::nullopt;
    auto n = numberAt(*v, 0);
    if (!n || *n != std::floor(*n))
        return std::nullopt;
    return static_cast<std::int64_t>(*n);
}

std::optional<double> keyReal(std::string_view line, std::string_view name) {
    auto v = keyValue(line, name);
    if (!v)
        return std::nullopt;
    return numberAt(*v, 0);
}

template <class T>
void setOnce(std::optional<T>& slot, const std::optional<T>& v, std::vector<std::string>& read,
             std::size_t lineNo, const std::string& what) {
    if (slot || !v)
        return;
    slot = v;
    std::ostringstream s;
    s << "line " << lineNo << ": " << what;
    read.push_back(s.str());
}

std::string gib(std::int64_t b) {
    return fixed(static_cast<double>(b) / kGiB, 2) + " GiB";
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

/// Lower case, every run of other characters one '-': "Llama-3.1_405B" → "llama-3-1-405b".
std::string normalizeName(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (std::isalnum(static_cast<unsigned char>(c)))
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        else if (!out.empty() && out.back() != '-')
            out += '-';
    }
    while (!out.empty() && out.back() == '-')
        out.pop_back();
    return out;
}

} // namespace

std::string toString(LogEngine e) {
    return e == LogEngine::Vllm ? "vllm" : "sglang";
}

Result<EngineLog> parseEngineLog(std::string_view text) {
    if (text.size() > kMaxLogBytes)
        return makeError("log", "larger than 64 MiB; paste the startup part only");
    EngineLog log;
    bool vllm = false, sglang = false;
    auto& rd = log.readLines;
    std::size_t lineNo = 0, start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos)
            end = text.size();
        std::string_view line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        ++lineNo;
        start = end + 1;

        // --- vLLM -------------------------------------------------------------------------
        if (line.find("Initializing a V1 LLM engine") != std::string_view::npos ||
            line.find("Initializing a V0 LLM engine") != std::string_view::npos ||
            line.find("Initializing an LLM engine") != std::string_view::npos ||
            line.find("non-default args:") != std::string_view::npos) {
            vllm = true;
            if (log.model.empty()) {
                auto m = keyValue(line, "model");
                if (!m)
                    m = keyValue(line, "model_tag");
                if (m && !m->empty()) {
                    log.model = *m;
                    rd.push_back("line " + std::to_string(lineNo) + ": model " + *m);
                }
            }
            setOnce(log.tp, keyInt(line, "tensor_parallel_size"), rd, lineNo,
                    "tensor_parallel_size");
            setOnce(log.dcp, keyInt(line, "decode_context_parallel_size"), rd, lineNo,
                    "decode_context_parallel_size");
            setOnce(log.maxModelLen, keyInt(line, "max_seq_len"), rd, lineNo, "max_seq_len");
            setOnce(log.maxModelLen, keyInt(line, "max_model_len"), rd, lineNo, "max_model_len");
            setOnce(log.kvCacheDtype, keyValue(line, "kv_cache_dtype"), rd, lineNo,
                    "kv_cache_dtype");
            setOnce(log.dtype, keyValue(line, "dtype"), rd, lineNo, "dtype");
            setOnce(log.quantization, keyValue(line, "quantization"), rd, lineNo, "quantization");
            setOnce(log.memUtil, keyReal(line, "gpu_memory_utilization"), rd, lineNo,
                    "gpu_memory_utilization");
            setOnce(log.maxNumBatchedTokens, keyInt(line, "max_num_batched_tokens"), rd, lineNo,
                    "max_num_batched_tokens");
            setOnce(log.blockSize, keyInt(line, "block_size"), rd, lineNo, "block_size");
        }
        if (auto p = after(line, "Chunked prefill is enabled with max_num_batched_tokens=")) {
            vllm = true;
            auto n = numberAt(line, *p);
            setOnce(log.maxNumBatchedTokens,
                    n ? std::optional<std::int64_t>(static_cast<std::int64_t>(*n)) : std::nullopt,
                    rd, lineNo, "max_num_batched_tokens");
        }
        if (auto p = after(line, "Model loading took")) {
            vllm = true;
            setOnce(log.weightBytes, memoryAt(line, *p), rd, lineNo, "model loading (weights)");
        }
        if (auto p = after(line, "Loading model weights took")) {
            vllm = true;
            setOnce(log.weightBytes, memoryAt(line, *p), rd, lineNo, "model weights");
        }
        if (auto p = after(line, "total_gpu_memory (")) {
            vllm = true;
            setOnce(log.totalGpuMemoryBytes, memoryAt(line, *p), rd, lineNo, "total_gpu_memory");
            if (auto u = after(line, "gpu_memory_utilization ("))
                setOnce(log.memUtil, numberAt(line, *u), rd, lineNo, "gpu_memory_utilization");
        }
        if (auto p = after(line, "total_gpu_memory=")) {
            vllm = true;
            setOnce(log.totalGpuMemoryBytes, memoryAt(line, *p), rd, lineNo, "total_gpu_memory");
        }
        if (auto p = after(line, "model weights take")) {
            setOnce(log.weightBytes, memoryAt(line, *p), rd, lineNo, "model weights");
            if (auto q = after(line, "non_torch_memory takes"))
                setOnce(log.nonTorchBytes, memoryAt(line, *q), rd, lineNo, "non_torch_memory");
            if (auto q = after(line, "activation peak memory takes"))
                setOnce(log.activationPeakBytes, memoryAt(line, *q), rd, lineNo, "activation peak");
            if (auto q = after(line, "reserved for KV Cache is"))
                setOnce(log.availableKvBytes, memoryAt(line, *q), rd, lineNo, "KV cache memory");
        }
        if (auto p = after(line, "Available KV cache memory:")) {
            vllm = true;
            setOnce(log.availableKvBytes, memoryAt(line, *p), rd, lineNo,
                    "available KV cache memory");
        }
        if (auto p = after(line, "GPU KV cache size:")) {
            vllm = true;
            auto n = numberAt(line, *p);
            setOnce(log.kvTokens,
                    n ? std::optional<std::int64_t>(static_cast<std::int64_t>(*n)) : std::nullopt,
                    rd, lineNo, "GPU KV cache size (tokens)");
        }
        // "# GPU blocks: N" (V1 before 0.7.3), "# cuda blocks: N, # CPU blocks: M" (V0)
        std::optional<std::size_t> blocksAt = after(line, "# GPU blocks:");
        if (!blocksAt)
            blocksAt = after(line, "# cuda blocks:");
        if (auto p = blocksAt) {
            vllm = true;
            auto n = numberAt(line, *p);
            setOnce(log.numGpuBlocks,
                    n ? std::optional<std::int64_t>(static_cast<std::int64_t>(*n)) : std::nullopt,
                    rd, lineNo, "GPU blocks");
        }
        if (auto p = after(line, "Maximum concurrency for")) {
            vllm = true;
            auto s = numberAt(line, *p);
            setOnce(log.concurrencyTokens,
                    s ? std::optional<std::int64_t>(static_cast<std::int64_t>(*s)) : std::nullopt,
                    rd, lineNo, "tokens per request");
            if (auto q = after(line, "tokens per request:"))
                setOnce(log.concurrency, numberAt(line, *q), rd, lineNo, "maximum concurrency");
        }
        if (line.find("Graph capturing finished") != std::string_view::npos) {
            if (auto p = after(line, "took"))
                setOnce(log.cudaGraphBytes, memoryAt(line, *p), rd, lineNo, "CUDA graphs");
        }

        // --- SGLang -------------------------------------------------------------------------
        if (line.find("server_args=ServerArgs(") != std::string_view::npos) {
            sglang = true;
            if (log.model.empty()) {
                if (auto m = keyValue(line, "model_path"); m && !m->empty()) {
                    log.model = *m;
                    rd.push_back("line " + std::to_string(lineNo) + ": model_path " + *m);
                }
            }
            setOnce(log.tp, keyInt(line, "tp_size"), rd, lineNo, "tp_size");
            setOnce(log.dcp, keyInt(line, "dcp_size"), rd, lineNo, "dcp_size");
            setOnce(log.memUtil, keyReal(line, "mem_fraction_static"), rd, lineNo,
                    "mem_fraction_static");
            setOnce(log.kvCacheDtype, keyValue(line, "kv_cache_dtype"), rd, lineNo,
                    "kv_cache_dtype");
            setOnce(log.dtype, keyValue(line, "dtype"), rd, lineNo, "dtype");
            setOnce(log.quantization, keyValue(line, "quantization"), rd, lineNo, "quantization");
            setOnce(log.maxModelLen, keyInt(line, "context_length"), rd, lineNo, "context_length");
            setOnce(log.maxNumBatchedTokens, keyInt(line, "chunked_prefill_size"), rd, lineNo,
                    "chunked_prefill_size");
            setOnce(log.blockSize, keyInt(line, "page_size"), rd, lineNo, "page_size");
        }
        if (line.find("Load weight begin.") != std::string_view::npos) {
            sglang = true;
            if (auto p = after(line, "avail mem="))
                setOnce(log.availBeforeWeightsBytes, memoryAt(line, *p), rd, lineNo,
                        "avail mem before weights");
        }
        if (line.find("Load weight end.") != std::string_view::npos) {
            sglang = true;
            if (auto p = after(line, "avail mem="))
                setOnce(log.availAfterWeightsBytes, memoryAt(line, *p), rd, lineNo,
                        "avail mem after weights");
            if (auto p = after(line, "mem usage="))
                setOnce(log.weightBytes, memoryAt(line, *p), rd, lineNo, "weights (mem usage)");
        }
        if (line.find("KV Cache is allocated.") != std::string_view::npos) {
            sglang = true;
            if (auto p = after(line, "#tokens:")) {
                auto n = numberAt(line, *p);
                setOnce(log.kvTokens,
                        n ? std::optional<std::int64_t>(static_cast<std::int64_t>(*n))
                          : std::nullopt,
                        rd, lineNo, "#tokens");
            }
            if (auto p = after(line, "K size:"))
                setOnce(log.kSizeBytes, memoryAt(line, *p), rd, lineNo, "K size");
            if (auto p = after(line, "V size:"))
                setOnce(log.vSizeBytes, memoryAt(line, *p), rd, lineNo, "V size");
            if (auto p = after(line, "KV size:"))
                setOnce(log.latentSizeBytes, memoryAt(line, *p), rd, lineNo, "KV size");
        }
        if (auto p = after(line, "max_total_num_tokens=")) {
            sglang = true;
            auto n = numberAt(line, *p);
            setOnce(log.maxTotalNumTokens,
                    n ? std::optional<std::int64_t>(static_cast<std::int64_t>(*n)) : std::nullopt,
                    rd, lineNo, "max_total_num_tokens");
            setOnce(log.maxRunningRequests, keyInt(line, "max_running_requests"), rd, lineNo,
                    "max_running_requests");
            setOnce(log.maxModelLen, keyInt(line, "context_len"), rd, lineNo, "context_len");
        }
        if (end == text.size())
            break;
    }
    if (vllm && sglang)
        return makeError("log", "holds both vLLM and SGLang lines; paste one engine's log");
    if (!vllm && !sglang)
        return makeError("log", "no vLLM or SGLang startup lines found (looked for "
                                "'Initializing a V1 LLM engine', 'GPU KV cache size', "
                                "'server_args=ServerArgs', 'KV Cache is allocated')");
    log.engine = vllm ? LogEngine::Vllm : LogEngine::Sglang;
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

Result<std::string> matchModelName(const std::string& logged) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!logged.empty() && (fs::is_regular_file(fs::path(logged) / "config.json", ec) ||
                            (fs::is_regular_file(logged, ec) && logged.size() > 5 &&
                             logged.compare(logged.size() - 5, 5, ".json") == 0)))
        return logged;
    // ".../models--org--Name/snapshots/<rev>" → "org/Name"
    std::string repo = logged;
    while (!repo.empty() && repo.back() == '/')
        repo.pop_back();
    if (auto p = repo.find("models--"); p != std::string::npos) {
        std::string rest = repo.substr(p + 8);
        rest = rest.substr(0, rest.find('/'));
        if (auto sep = rest.find("--"); sep != std::string::npos)
            rest = rest.substr(0, sep) + "/" + rest.substr(sep + 2);
        repo = rest;
    }
    std::string base = repo.substr(repo.rfind('/') == std::string::npos ? 0 : repo.rfind('/') + 1);
    std::string name = lower(base);
    static const char* suffixes[] = {"-instruct", "-chat", "-hf",   "-base", "-it",   "-fp8",
                                     "-awq",      "-gptq", "-int4", "-int8", "-w8a8", "-dynamic"};
    for (bool again = true; again;) {
        again = false;
        for (const char* s : suffixes) {
            const std::string suf = s;
            if (name.size() > suf.size() &&
                name.compare(name.size() - suf.size(), suf.size(), suf) == 0) {
                name.resize(name.size() - suf.size());
                again = true;
            }
        }
    }
    if (name.rfind("meta-", 0) == 0)
        name = name.substr(5);
    const std::string key = normalizeName(name);
    std::string best;
    std::size_t bestLen = 0;
    for (const auto& p : modelPresets()) {
        for (const std::string& cand : {normalizeName(p.id), normalizeName(p.title)}) {
            if (cand.empty())
                continue;
            if (cand == key)
                return p.id;
            // "deepseek-v3-0324" is a revision of "deepseek-v3"; "llama-2-70b" is not "llama-2-7b".
            if (key.size() > cand.size() && key.compare(0, cand.size(), cand) == 0 &&
                key[cand.size()] == '-' && cand.size() > bestLen) {
                best = p.id;
                bestLen = cand.size();
            }
        }
    }
    if (!best.empty())
        return best;
    for (const auto& hf : findHuggingFaceConfigs())
        if (lower(hf.repoId) == lower(repo))
            return hf.path;
    return makeError("model", "'" + logged +
                                  "' matches no preset and is not in the Hugging Face cache; "
                                  "pass --model with a preset id or a config.json path");
}

namespace {

ExplainTerm term(std::string key, std::string label, std::string unit, double predicted,
                 std::optional<double> logged, bool inferred, std::string explanation) {
    return ExplainTerm{std::move(key), std::move(label), std::move(unit),       predicted,
                       logged,         inferred,         std::move(explanation)};
}

std::optional<double> asDouble(const std::optional<std::int64_t>& v) {
    if (!v)
        return std::nullopt;
    return static_cast<double>(*v);
}

Result<GpuSpec> pickGpu(const EngineLog& log, const ExplainOptions& opt,
                        std::vector<std::string>& notes) {
    if (!opt.gpu.empty()) {
        auto g = loadGpu(opt.gpu);
        if (!g.ok())
            return makeError("gpu", g.error().message());
        return g;
    }
    std::optional<std::int64_t> total = log.totalGpuMemoryBytes;
    if (!total && log.availBeforeWeightsBytes)
        total = log.availBeforeWeightsBytes;
    if (total) {
        // The log gives a memory size, not a name: every preset within 6% matches; the default
        // GPU wins among them, else the nearest.
        std::vector<GpuSpec> matches;
        std::optional<GpuSpec> nearest;
        double nearestGap = 0.06;
        for (const auto& p : gpuPresets()) {
            auto g = loadGpu(p.id);
            if (!g.ok())
                continue;
            const double gap =
                std::fabs(double(g->reportedMemoryBytes()) - double(*total)) / double(*total);
            if (gap >= 0.06)
                continue;
            matches.push_back(g.value());
            if (gap < nearestGap) {
                nearestGap = gap;
                nearest = g.value();
            }
        }
        for (const auto& g : matches)
            if (g.id == kDefaultGpuId)
                nearest = g;
        if (nearest) {
            std::string others;
            for (const auto& g : matches)
                if (g.id != nearest->id)
                    others += (others.empty() ? "" : ", ") + g.id;
            notes.push_back("GPU inferred from the logged memory (" + gib(*total) +
                            "): " + nearest->name +
                            (others.empty() ? std::string() : " (also matches " + others + ")") +
                            "; pass --gpu to choose another");
            return *nearest;
        }
    }
    auto g = loadGpu(kDefaultGpuId);
    if (!g.ok())
        return makeError("gpu", g.error().message());
    notes.push_back(std::string("the log does not name the GPU; assumed ") + g->name +
                    " (pass --gpu)");
    return g;
}

} // namespace

Result<LogExplanation> explainEngineLog(const EngineLog& log, const ExplainOptions& opt) {
    LogExplanation e;
    e.log = log;
    auto ref = opt.model.empty() ? matchModelName(log.model) : Result<std::string>(opt.model);
    if (!ref.ok())
        return ref.error();
    e.modelRef = ref.value();
    auto model = loadModel(e.modelRef);
    if (!model.ok())
        return makeError("model", model.error().message());
    auto gpu = pickGpu(log, opt, e.notes);
    if (!gpu.ok())
        return gpu.error();

    Deployment d;
    d.poolModel = PoolModel::Vllm;
    d.tp = log.tp.value_or(1);
    d.dcp = log.dcp.value_or(1);
    if (!log.tp)
        e.notes.push_back("no TP size in the log; assumed 1");
    const bool isVllm = log.engine == LogEngine::Vllm;
    if (log.memUtil) {
        d.gpuMemUtil = *log.memUtil;
    } else {
        d.gpuMemUtil = isVllm ? 0.9 : 0.88;
        e.notes.push_back(std::string("no ") +
                          (isVllm ? "gpu_memory_utilization" : "mem_fraction_static") +
                          " in the log; assumed " + fixed(d.gpuMemUtil, 2));
    }
    if (log.kvCacheDtype) {
        auto k = parseKvDtype(*log.kvCacheDtype);
        if (k.ok())
            d.kvDtype = k.value();
        else
            e.notes.push_back("kv_cache_dtype '" + *log.kvCacheDtype +
                              "' not understood; assumed auto");
    }
    if (log.concurrencyTokens)
        d.context = *log.concurrencyTokens;
    else if (log.maxModelLen)
        d.context = *log.maxModelLen;
    else
        d.context =
            model->maxPositionEmbeddings.value > 0 ? model->maxPositionEmbeddings.value : 8192;
    if (log.maxNumBatchedTokens)
        d.maxNumBatchedTokens = *log.maxNumBatchedTokens;
    if (isVllm && log.blockSize)
        d.blockSize = *log.blockSize;
    auto report = evaluate(model.value(), gpu.value(), d);
    if (!report.ok())
        return report.error();
    e.scenario = Scenario{model.value(), gpu.value(), d};
    e.report = report.value();
    const Report& r = e.report;
    const PoolBreakdown& pool = r.pool;
    const double cell = double(r.cellBytesPerTokenPerRank);

    if (isVllm) {
        // Budget: util × what the driver reports.
        std::optional<double> loggedBudget;
        if (log.totalGpuMemoryBytes)
            loggedBudget = d.gpuMemUtil * double(*log.totalGpuMemoryBytes);
        e.terms.push_back(term("budget", "util × GPU memory", "B", double(pool.budgetBytes),
                               loggedBudget, false,
                               "vLLM starts from util × the total the CUDA driver reports (" +
                                   gib(pool.capacityBytes) + " here, " + pool.capacitySource +
                                   "), not the datasheet's decimal GB"));
        e.terms.push_back(
            term("weights", "weights per rank", "B", double(pool.weightBytes),
                 asDouble(log.weightBytes), false,
                 "kvscope counts the checkpoint's parameters / TP; the engine also holds unsharded "
                 "pieces (embeddings padding, rotary caches, norms on every rank)"));
        const double predictedOverhead = double(pool.activationPeakBytes + pool.nonTorchBytes());
        std::optional<double> loggedOverhead;
        bool overheadInferred = false;
        if (log.nonTorchBytes && log.activationPeakBytes) {
            loggedOverhead = double(*log.nonTorchBytes + *log.activationPeakBytes);
        } else if (log.weightBytes && log.availableKvBytes) {
            const double budget = loggedBudget ? *loggedBudget : double(pool.budgetBytes);
            loggedOverhead = budget - double(*log.weightBytes) - double(*log.availableKvBytes);
            overheadInferred = true;
        }
        e.terms.push_back(term(
            "overhead", "activation peak + non-torch memory", "B", predictedOverhead,
            loggedOverhead, overheadInferred,
            "the profiling forward pass at max_num_batched_tokens=" +
                withCommas(d.maxNumBatchedTokens) +
                " (activations), plus CUDA context, NCCL and custom all-reduce buffers and CUDA "
                "graphs" +
                (overheadInferred ? "; logged value inferred as budget − weights − KV memory"
                                  : "")));
        e.terms.push_back(term("pool", "KV cache memory per rank", "B", double(pool.poolBytes),
                               asDouble(log.availableKvBytes), false,
                               "what is left: budget − weights − overhead"));
        std::optional<double> loggedTokens = asDouble(log.kvTokens);
        if (!loggedTokens && log.numGpuBlocks)
            loggedTokens = double(*log.numGpuBlocks * d.blockSize);
        std::optional<double> loggedCell;
        if (log.availableKvBytes && loggedTokens && *loggedTokens > 0)
            loggedCell = double(*log.availableKvBytes) / *loggedTokens;
        e.terms.push_back(term(
            "cell", "bytes per token per rank", "B", cell, loggedCell, true,
            "(head_size + head_size_v) · b · KV heads per rank · L = " +
                withCommas(r.cellBytesPerTokenPerRank) +
                " B; the logged figure is KV memory / tokens, so it also carries block rounding"));
        e.terms.push_back(term("page", "vLLM page (all layers)", "B",
                               double(r.pageBytes) * double(r.layers), std::nullopt, false,
                               withCommas(r.pageBytes) + " B per layer × " +
                                   std::to_string(r.layers) + " layers, " +
                                   std::to_string(d.blockSize) + " tokens per block"));
        e.terms.push_back(term("tokens", "GPU KV cache size", "tokens", double(r.vllmTokens),
                               loggedTokens, false,
                               "floor(pool / page) blocks × block size × DCP"));
        if (log.availableKvBytes && r.pageBytes > 0 && r.layers > 0) {
            const std::int64_t blocks = *log.availableKvBytes / (r.pageBytes * r.layers);
            const double withLoggedPool = double(blocks * d.blockSize * d.dcp);
            e.terms.push_back(
                term("tokens_from_logged_pool", "tokens kvscope computes from the logged KV memory",
                     "tokens", withLoggedPool, loggedTokens, false,
                     "block rounding on the logged pool; equal to the logged tokens means the cell "
                     "and paging agree and the whole gap is the pool"));
        }
        e.terms.push_back(
            term("concurrency", "maximum concurrency at " + withCommas(d.context) + " tokens", "x",
                 r.vllmConcurrency, log.concurrency, false, "tokens / max_model_len"));
    } else {
        // SGLang: rest = avail after weights − total × (1 − mem_fraction_static), where total
        // is what was free before loading; tokens = rest / cell, page size 1.
        const double total = log.availBeforeWeightsBytes ? double(*log.availBeforeWeightsBytes)
                                                         : double(gpu->reportedMemoryBytes());
        if (!log.availBeforeWeightsBytes)
            e.notes.push_back("no 'Load weight begin. avail mem=' line; the GPU's reported "
                              "memory stands in for what was free before loading");
        const double predWeights = double(r.weightBytesPerRank);
        const double predPool = total - predWeights - total * (1.0 - d.gpuMemUtil);
        e.terms.push_back(term("budget", "mem_fraction_static × free memory at start", "B",
                               d.gpuMemUtil * double(gpu->reportedMemoryBytes()),
                               log.availBeforeWeightsBytes
                                   ? std::optional<double>(d.gpuMemUtil * total)
                                   : std::nullopt,
                               false,
                               "SGLang keeps (1 − mem_fraction_static) of what was free before "
                               "loading for activations and CUDA graphs"));
        e.terms.push_back(term("weights", "weights per rank", "B", predWeights,
                               asDouble(log.weightBytes), false,
                               "kvscope counts the checkpoint's parameters / TP; SGLang's "
                               "mem usage also includes allocator slack"));
        std::optional<double> loggedPool;
        if (log.kSizeBytes && log.vSizeBytes)
            loggedPool = double(*log.kSizeBytes + *log.vSizeBytes);
        else if (log.latentSizeBytes)
            loggedPool = double(*log.latentSizeBytes);
        e.terms.push_back(term("pool", "KV pool per rank", "B", predPool, loggedPool, false,
                               "avail after weights − free at start × (1 − mem_fraction_static)"));
        std::optional<double> loggedCell;
        if (loggedPool && log.kvTokens && *log.kvTokens > 0)
            loggedCell = *loggedPool / double(*log.kvTokens);
        e.terms.push_back(term("cell", "bytes per token per rank", "B", cell, loggedCell, true,
                               "KV heads per rank × (head_dim + v_head_dim) × L × b (MLA: the "
                               "latent, on every rank); logged = (K + V size) / #tokens"));
        e.terms.push_back(term("tokens", "max_total_num_tokens", "tokens",
                               cell > 0 ? std::floor(std::max(predPool, 0.0) / cell) : 0,
                               asDouble(log.kvTokens), false,
                               "pool / cell, page size 1: no block rounding"));
        if (log.availAfterWeightsBytes && cell > 0) {
            const double loggedRest =
                double(*log.availAfterWeightsBytes) - total * (1 - d.gpuMemUtil);
            e.terms.push_back(term(
                "tokens_from_logged_pool", "tokens kvscope computes from the logged free memory",
                "tokens", std::floor(std::max(loggedRest, 0.0) / cell), asDouble(log.kvTokens),
                false, "SGLang's formula on the logged numbers with kvscope's cell"));
        }
    }

    // Summary: which term moved the tokens most.
    const ExplainTerm* tokens = nullptr;
    for (const auto& t : e.terms)
        if (t.key == "tokens")
            tokens = &t;
    if (tokens && tokens->logged) {
        const double diff = tokens->predicted - *tokens->logged;
        std::string cause;
        double worst = 0;
        for (const auto& t : e.terms) {
            if (!t.logged || t.unit != "B" || t.key == "pool" || t.key == "cell" ||
                t.key == "budget")
                continue;
            if (std::fabs(t.predicted - *t.logged) > worst) {
                worst = std::fabs(t.predicted - *t.logged);
                cause = t.label + " (" + (t.predicted > *t.logged ? "kvscope " : "engine ") +
                        gib(std::llround(worst)) + " more)";
            }
        }
        e.summary = "kvscope predicts " + withCommas(std::llround(tokens->predicted)) +
                    " tokens, the log says " + withCommas(std::llround(*tokens->logged)) + " (" +
                    (diff >= 0 ? "+" : "") +
                    fixed(100.0 * diff / std::max(1.0, *tokens->logged), 1) + " %)";
        if (!cause.empty())
            e.summary += "; the largest memory difference is " + cause;
    } else {
        e.summary = "kvscope predicts " + withCommas(r.vllmTokens) +
                    " tokens; the log states no token count to compare";
    }
    return e;
}

namespace {

std::string show(const ExplainTerm& t, double v) {
    if (t.unit == "B")
        return std::fabs(v) >= kGiB / 10 ? gib(std::llround(v))
                                         : withCommas(std::llround(v)) + " B";
    if (t.unit == "tokens")
        return withCommas(std::llround(v));
    return fixed(v, 2) + "x";
}

} // namespace

std::string explanationText(const LogExplanation& e) {
    std::ostringstream out;
    const Deployment& d = e.scenario.deployment;
    out << toString(e.log.engine) << " log: " << e.log.model << " → " << e.modelRef << " on "
        << e.scenario.gpu.name << ", TP=" << d.tp;
    if (d.dcp > 1)
        out << ", DCP=" << d.dcp;
    out << ", util " << fixed(d.gpuMemUtil, 2) << ", KV " << toString(e.report.kvDtype)
        << ", S=" << withCommas(d.context) << "\n\n";
    out << "  term                                                kvscope          log\n";
    for (const auto& t : e.terms) {
        char line[512];
        const std::string logged =
            t.logged ? show(t, *t.logged) + (t.inferred ? " (implied)" : "") : std::string("—");
        std::snprintf(line, sizeof line, "  %-50s %-16s %s", t.label.c_str(),
                      show(t, t.predicted).c_str(), logged.c_str());
        out << line << "\n      " << t.explanation << "\n";
    }
    out << "\n" << e.summary << "\n";
    for (const auto& n : e.notes)
        out << "note: " << n << "\n";
    return out.str();
}

std::string explanationJson(const LogExplanation& e) {
    json j = json::object();
    j["engine"] = toString(e.log.engine);
    j["model_logged"] = e.log.model;
    j["model"] = e.modelRef;
    j["gpu"] = e.scenario.gpu.id;
    j["tp"] = e.scenario.deployment.tp;
    j["dcp"] = e.scenario.deployment.dcp;
    j["util"] = e.scenario.deployment.gpuMemUtil;
    j["context"] = e.scenario.deployment.context;
    j["kv_dtype"] = toString(e.report.kvDtype);
    json terms = json::array();
    for (const auto& t : e.terms) {
        json x = json::object();
        x["key"] = t.key;
        x["label"] = t.label;
        x["unit"] = t.unit;
        x["predicted"] = t.predicted;
        x["logged"] = t.logged ? json(*t.logged) : json(nullptr);
        x["logged_inferred"] = t.inferred;
        x["difference"] = t.logged ? json(t.predicted - *t.logged) : json(nullptr);
        x["explanation"] = t.explanation;
        terms.push_back(x);
    }
    j["terms"] = terms;
    j["summary"] = e.summary;
    j["notes"] = e.notes;
    j["read"] = e.log.readLines;
    return j.dump(2) + "\n";
}

} // namespace kvscope
