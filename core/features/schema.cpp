#include "core/features/schema.h"

#include "core/features/schema_codecs.h"
#include "core/model/presets.h"

#include <cmath>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>

namespace kvscope {

using nlohmann::json;

namespace {

using namespace schema_detail;

// --- Row builders templated on the member's type (the others are in schema_codecs.cpp). ---

/// A closed set of words parsed into an enum Deployment member.
template <class E>
Field choiceRow(std::string key, std::string flag, E Deployment::*member,
                Result<E> (*parse)(std::string_view), std::string (*name)(E),
                std::vector<std::string> words, std::string help, std::string example) {
    Field f = baseRow(std::move(key), std::move(flag), FieldKind::Choice, std::move(help),
                      std::move(example));
    f.defaultText = name(Deployment{}.*member);
    std::string list;
    for (const auto& w : words)
        list += (list.empty() ? "" : ", ") + w;
    f.words = std::move(words);
    f.jsonRule = "must be a string (" + list + ")";
    f.check = [parse](std::string_view t) -> std::string {
        auto v = parse(t);
        return v.ok() ? std::string() : v.error().rule;
    };
    f.set = [member, parse](Session& s, std::string_view t, FieldNotes&) {
        if (auto v = parse(t); v.ok())
            s.deployment.*member = v.value();
    };
    f.get = [member, name](const Session& s) -> std::optional<std::string> {
        return name(s.deployment.*member);
    };
    return f;
}

/// A custom GPU figure: `scale` converts the flag's unit to GpuSpec's (TB/s → bytes/s).
/// `zeroIsNone`: 0 means "not known / not present" (fp8 peak, driver memory).
template <class T>
Field gpuRow(std::string key, std::string flag, T GpuSpec::*member, double scale, double max,
             bool zeroIsNone, std::string unit, std::string help, std::string example,
             std::string GpuSpec::*source = nullptr) {
    Field f = baseRow(std::move(key), std::move(flag),
                      std::is_integral_v<T> && scale == 1 ? FieldKind::Integer : FieldKind::Number,
                      std::move(help), std::move(example));
    f.group = FieldGroup::CustomGpu;
    f.min = f.kind == FieldKind::Integer ? 1 : 0;
    f.max = max;
    f.unit = std::move(unit);
    if (zeroIsNone)
        f.words = {"0"};
    f.jsonRule =
        f.kind == FieldKind::Integer ? "must be a positive integer" : "must be a positive number";
    const std::string sourceText = f.key;
    f.set = [member, scale, source, sourceText](Session& s, std::string_view t, FieldNotes&) {
        if (!s.customGpu)
            s.customGpu = blankGpu();
        const double v = parseNumber(t).value_or(0) * scale;
        T value{};
        if constexpr (std::is_integral_v<T>)
            value = static_cast<T>(std::llround(v));
        else
            value = v;
        if (source && (*s.customGpu).*member != value) // a new figure: say where it came from
            (*s.customGpu).*source = v > 0 ? sourceText : "";
        (*s.customGpu).*member = value;
    };
    const bool integer = f.kind == FieldKind::Integer;
    f.get = [member, scale, integer, zeroIsNone](const Session& s) -> std::optional<std::string> {
        if (!s.customGpu)
            return std::nullopt;
        const double v = static_cast<double>((*s.customGpu).*member) / scale;
        if (zeroIsNone && v == 0)
            return std::string("0");
        return integer ? integerText(v) : numberText(v);
    };
    f.toJson = [member, scale, integer, zeroIsNone](const Session& s) -> std::optional<json> {
        if (!s.customGpu)
            return std::nullopt;
        const double v = static_cast<double>((*s.customGpu).*member) / scale;
        if (zeroIsNone && v == 0)
            return std::nullopt; // parseGpuJson reads a missing key as 0
        return integer ? json(static_cast<std::int64_t>(v)) : json(v);
    };
    return f;
}

/// h_kv: a what-if KV head count, or the words for the model's own and its latent cache.
Field kvHeadsRow() {
    Field f = baseRow("h_kv", "--h-kv", FieldKind::Integer,
                      "what-if KV head count (a divisor of the query heads); latent: an MLA "
                      "model's latent cache; default: the model's own",
                      "8");
    f.min = 1;
    f.max = static_cast<double>(kMaxHeads);
    f.unit = "heads";
    f.words = {"latent", "mla", "auto"};
    f.jsonRule = "must be a positive integer, \"latent\" or \"auto\"";
    f.set = [](Session& s, std::string_view t, FieldNotes& notes) {
        if (t == "latent" || t == "mla") {
            notes.latentRequested = true;
            s.deployment.kvHeads.reset();
        } else if (t == "auto" || t.empty()) {
            s.deployment.kvHeads.reset();
        } else {
            s.deployment.kvHeads = parseInteger(t).value_or(0);
        }
    };
    f.get = [](const Session& s) -> std::optional<std::string> {
        if (!s.deployment.kvHeads)
            return std::nullopt;
        return std::to_string(*s.deployment.kvHeads);
    };
    return f;
}

/// The engine and release whose rules size the pool.
Field engineRow() {
    Field f = baseRow("engine", "--engine", FieldKind::Text,
                      "the engine and release whose rules size the pool: vllm[@VER] or "
                      "sglang[@VER]; no version: the newest modelled",
                      "sglang@0.4.3");
    f.defaultText = defaultEngine().text();
    f.jsonRule = "must be a string: vllm[@VER] or sglang[@VER]";
    f.check = [](std::string_view t) -> std::string {
        auto e = parseEngineSpec(t);
        return e.ok() ? std::string() : e.error().rule;
    };
    f.set = [](Session& s, std::string_view t, FieldNotes&) {
        if (auto e = parseEngineSpec(t); e.ok())
            s.deployment.engine = e.value();
    };
    f.get = [](const Session& s) -> std::optional<std::string> {
        return s.deployment.engine.text();
    };
    return f;
}

void addSelectionRows(std::vector<Field>& rows) {
    // Selection.
    rows.push_back(referenceRow("model", "--model", &Session::model,
                                "model: a preset id (kvscope-cli models), a config.json or its "
                                "folder",
                                "deepseek-v3"));
    rows.push_back(referenceRow("gpu", "--gpu", &Session::gpu,
                                "GPU: a preset id (kvscope-cli gpus) or a GPU JSON file", "h200"));
    rows.back().jsonRule = "must be a preset id, a path or an object of GPU figures";
}

void addDeploymentRows(std::vector<Field>& rows) {
    // Deployment (core/law/law.h). The ranges are validate()'s; the engine rules that need the
    // model (TP divides the heads, DCP needs TP > h_kv, ...) stay in validate().
    rows.push_back(integerRow("tp", "--tp", &Deployment::tp, 1, kMaxTp, "ranks",
                              "tensor-parallel size (vLLM's --tensor-parallel-size)", "8"));
    rows.push_back(integerRow("dcp", "--dcp", &Deployment::dcp, 1, kMaxTp, "ranks",
                              "decode context parallel size (vLLM's "
                              "--decode-context-parallel-size)",
                              "2"));
    rows.push_back(kvHeadsRow());
    rows.push_back(choiceRow<KvDtype>(
        "kv_dtype", "--kv-dtype", &Deployment::kvDtype, &parseKvDtype, &toString,
        {"auto", "bf16", "fp16", "fp8", "fp32", "fp8_ds_mla"},
        "KV cache dtype (vLLM's --kv-cache-dtype); auto: the model's dtype", "fp8"));
    rows.push_back(choiceRow<WeightDtype>(
        "weight_dtype", "--weight-dtype", &Deployment::weightDtype, &parseWeightDtype, &toString,
        {"auto", "bf16", "fp8"}, "weight dtype; auto: as the checkpoint is served", "fp8"));
    rows.push_back(integerRow("context", "--context", &Deployment::context, 1, kMaxContext,
                              "tokens", "tokens per request (S)", "32768"));
    rows.push_back(integerRow("batch", "--batch", &Deployment::batch, 1, kMaxBatch, "requests",
                              "concurrent requests in the decode step (B)", "16"));
    {
        Field f =
            numberRow("gpu_mem_util", "--gpu-mem-util", &Deployment::gpuMemUtil, 0, 1, "fraction",
                      "fraction of GPU memory the engine may use (vLLM's "
                      "--gpu-memory-utilization)",
                      "0.85");
        f.oldFlags = {"--util"};
        f.oldKeys = {"util"};
        rows.push_back(std::move(f));
    }
    rows.push_back(choiceRow<PoolModel>(
        "pool_model", "--pool-model", &Deployment::poolModel, &parsePoolModel, &toString,
        {"vllm", "datasheet"},
        "vllm: driver total minus weights, activations and non-torch memory; datasheet: the "
        "chapter's util x capacity - weights / TP",
        "datasheet"));
    rows.push_back(optionalNumberRow("pool_gib", "--pool-gib", &Deployment::poolGiB, 0, 1e6, "GiB",
                                     "KV pool per rank, overriding the pool model", "40.5"));
    rows.push_back(integerRow("max_num_batched_tokens", "--max-num-batched-tokens",
                              &Deployment::maxNumBatchedTokens, 1, kMaxContext, "tokens",
                              "vLLM's profiling pass size (--max-num-batched-tokens)", "16384"));
    rows.push_back(integerRow("block_size", "--block-size", &Deployment::blockSize, 1, 256,
                              "tokens", "vLLM page size (--block-size: 1, 8, 16, ..., 256)", "64"));
    rows.push_back(engineRow());
    rows.push_back(integerRow("pp", "--pp", &Deployment::pp, 1, kMaxTp, "stages",
                              "pipeline-parallel size: the layers split into stages, each stage "
                              "its own pool",
                              "2"));
    rows.push_back(optionalNumberRow("mem_fraction_static", "--mem-fraction-static",
                                     &Deployment::memFractionStatic, 0, 1, "fraction",
                                     "SGLang's --mem-fraction-static; default: SGLang's own for "
                                     "the release and TP",
                                     "0.85"));
}

void addCustomGpuRows(std::vector<Field>& rows) {
    // A custom GPU's figures (the keys of a GPU JSON file, see core/model/gpu.h).
    rows.push_back(
        gpuTextRow("name", "--gpu-name", &GpuSpec::name, "custom GPU: display name", "Lab card"));
    rows.push_back(gpuRow("memory_gb", "--gpu-memory-gb", &GpuSpec::memoryBytes, 1e9, 1e6, false,
                          "GB", "custom GPU: datasheet memory, decimal GB", "96"));
    rows.push_back(gpuRow("driver_memory_gib", "--gpu-driver-memory-gib",
                          &GpuSpec::driverMemoryBytes, 1073741824.0, 1e6, true, "GiB",
                          "custom GPU: total memory the driver reports (0: unknown)", "79.19"));
    rows.push_back(gpuRow("bandwidth_tb_s", "--gpu-bandwidth-tb-s", &GpuSpec::bandwidthBytesPerS,
                          1e12, 1e4, false, "TB/s", "custom GPU: memory bandwidth", "4"));
    rows.push_back(gpuRow("bf16_tflops", "--gpu-bf16-tflops", &GpuSpec::peakBf16FlopPerS, 1e12, 1e7,
                          false, "TFLOP/s", "custom GPU: dense bf16 tensor peak", "1200"));
    rows.push_back(gpuRow("fp8_tflops", "--gpu-fp8-tflops", &GpuSpec::peakFp8FlopPerS, 1e12, 1e7,
                          true, "TFLOP/s", "custom GPU: dense fp8 tensor peak (0: none)", "2400"));
    rows.push_back(gpuRow("fp32_tflops", "--gpu-fp32-tflops", &GpuSpec::peakFp32FlopPerS, 1e12, 1e7,
                          false, "TFLOP/s", "custom GPU: fp32 peak", "80"));
    rows.push_back(gpuRow("gpus_per_node", "--gpu-per-node", &GpuSpec::gpusPerNode, 1, 1024, false,
                          "GPUs", "custom GPU: GPUs per node", "4"));
    rows.push_back(gpuRow("interconnect_gb_s", "--gpu-interconnect-gb-s",
                          &GpuSpec::interconnectBytesPerS, 1e9, 1e6, true, "GB/s",
                          "custom GPU: GPU-to-GPU bandwidth per GPU, bidirectional (0: unknown)",
                          "900", &GpuSpec::interconnectSource));
    rows.push_back(gpuTextRow("interconnect", "--gpu-interconnect", &GpuSpec::interconnect,
                              "custom GPU: the link's name", "NVLink 4"));
}

std::vector<Field> buildSchema() {
    std::vector<Field> rows;
    addSelectionRows(rows);
    addDeploymentRows(rows);
    addCustomGpuRows(rows);
    for (auto& f : rows)
        finish(f);
    return rows;
}

std::mutex& sinkMutex() {
    static std::mutex m;
    return m;
}

DeprecationSink& sink() {
    static DeprecationSink s = [](const std::string& line) {
        static std::set<std::string> seen;
        if (seen.insert(line).second)
            std::cerr << "kvscope: " << line << '\n';
    };
    return s;
}

} // namespace

const std::vector<Field>& schemaFields() {
    static const std::vector<Field> rows = buildSchema();
    return rows;
}

const Field* findField(std::string_view name, std::optional<FieldGroup> group) {
    for (const auto& f : schemaFields()) {
        if (group && f.group != *group)
            continue;
        if (f.key == name || f.flag == name)
            return &f;
        for (const auto& o : f.oldFlags)
            if (o == name)
                return &f;
        for (const auto& o : f.oldKeys)
            if (o == name)
                return &f;
    }
    return nullptr;
}

Result<Session> applyFieldTexts(Session s, const FieldTexts& values, FieldNotes* notesOut) {
    FieldNotes local;
    FieldNotes& notes = notesOut ? *notesOut : local;
    bool custom = false;
    for (const auto& [f, text] : values) {
        if (auto rule = f->check(text); !rule.empty())
            return makeError(f->flag, rule);
        if (f->group == FieldGroup::CustomGpu)
            custom = true;
        else
            f->set(s, text, notes);
    }
    if (!custom)
        return s;
    if (!s.customGpu) {
        auto base = loadGpu(s.gpu);
        if (!base.ok())
            return makeError("--gpu", base.error().message());
        s.customGpu = base.value();
        s.customGpu->id = "custom";
        s.customGpu->name = base->name + " (custom)";
    }
    for (const auto& [f, text] : values)
        if (f->group == FieldGroup::CustomGpu)
            f->set(s, text, notes);
    if (auto ok = validateGpu(*s.customGpu); !ok.ok()) {
        const Field* f = findField(ok.error().field, FieldGroup::CustomGpu);
        return makeError(f ? f->flag : ok.error().field, ok.error().rule);
    }
    return s;
}

std::vector<std::string> sessionToFlags(const Session& s) {
    std::vector<std::string> out;
    for (const auto& f : schemaFields()) {
        if (auto v = f.get(s)) {
            out.push_back(f.flag);
            out.push_back(*v);
        }
    }
    return out;
}

DeprecationSink setDeprecationSink(DeprecationSink next) {
    std::lock_guard<std::mutex> lock(sinkMutex());
    DeprecationSink previous = std::move(sink());
    sink() = std::move(next);
    return previous;
}

void reportDeprecation(const std::string& line) {
    std::lock_guard<std::mutex> lock(sinkMutex());
    if (sink())
        sink()(line);
}

} // namespace kvscope
