#include "core/features/schema.h"

#include "core/model/presets.h"

#include <charconv>
#include <cmath>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>

namespace kvscope {

using nlohmann::json;

namespace {

std::string quoted(std::string_view s) {
    return "'" + std::string(s) + "'";
}

std::optional<std::int64_t> parseInteger(std::string_view text) {
    std::int64_t out = 0;
    const char* b = text.data();
    const char* e = b + text.size();
    auto [p, ec] = std::from_chars(b, e, out);
    if (text.empty() || ec != std::errc() || p != e)
        return std::nullopt;
    return out;
}

/// Locale-independent (the GUI runs under the user's LC_NUMERIC, where strtod may want "0,85").
std::optional<double> parseNumber(std::string_view text) {
    double v = 0;
    const char* b = text.data();
    const char* e = b + text.size();
    auto [p, ec] = std::from_chars(b, e, v, std::chars_format::general);
    if (text.empty() || ec != std::errc() || p != e || !std::isfinite(v))
        return std::nullopt;
    return v;
}

/// Shortest text that reads back to the same double ("0.85", "40.5", "96.0").
std::string numberText(double v) {
    return json(v).dump();
}

std::string integerText(double v) {
    return std::to_string(static_cast<long long>(v));
}

GpuSpec blankGpu() {
    GpuSpec g;
    g.id = "custom";
    g.name = "custom";
    return g;
}

// --- Row builders: each makes the check/set/get/JSON hooks of one kind of field. -----------

/// An integer Deployment member in [min, max].
Field integerRow(std::string key, std::string flag, std::int64_t Deployment::*member,
                 std::int64_t min, std::int64_t max, std::string unit, std::string help,
                 std::string example) {
    Field f;
    f.key = std::move(key);
    f.flag = std::move(flag);
    f.kind = FieldKind::Integer;
    f.defaultText = std::to_string(Deployment{}.*member);
    f.min = static_cast<double>(min);
    f.max = static_cast<double>(max);
    f.unit = std::move(unit);
    f.help = std::move(help);
    f.example = std::move(example);
    f.jsonRule = "must be a positive integer";
    f.set = [member](Session& s, std::string_view t, FieldNotes&) {
        s.deployment.*member = parseInteger(t).value_or(0);
    };
    f.get = [member](const Session& s) -> std::optional<std::string> {
        return std::to_string(s.deployment.*member);
    };
    return f;
}

/// A real Deployment member in (min, max].
Field numberRow(std::string key, std::string flag, double Deployment::*member, double min,
                double max, std::string unit, std::string help, std::string example) {
    Field f;
    f.key = std::move(key);
    f.flag = std::move(flag);
    f.kind = FieldKind::Number;
    f.defaultText = numberText(Deployment{}.*member);
    f.min = min;
    f.max = max;
    f.unit = std::move(unit);
    f.help = std::move(help);
    f.example = std::move(example);
    f.set = [member](Session& s, std::string_view t, FieldNotes&) {
        s.deployment.*member = parseNumber(t).value_or(0);
    };
    f.get = [member](const Session& s) -> std::optional<std::string> {
        return numberText(s.deployment.*member);
    };
    return f;
}

/// An optional real Deployment member in (min, max]; unset is no flag, a JSON null, or "".
Field optionalNumberRow(std::string key, std::string flag,
                        std::optional<double> Deployment::*member, double min, double max,
                        std::string unit, std::string help, std::string example) {
    Field f;
    f.key = std::move(key);
    f.flag = std::move(flag);
    f.kind = FieldKind::Number;
    f.min = min;
    f.max = max;
    f.unit = std::move(unit);
    f.help = std::move(help);
    f.example = std::move(example);
    f.set = [member](Session& s, std::string_view t, FieldNotes&) {
        if (t.empty())
            (s.deployment.*member).reset();
        else
            s.deployment.*member = parseNumber(t).value_or(0);
    };
    f.get = [member](const Session& s) -> std::optional<std::string> {
        if (!(s.deployment.*member))
            return std::nullopt;
        return numberText(*(s.deployment.*member));
    };
    return f;
}

/// A closed set of words parsed into an enum Deployment member.
template <class E>
Field choiceRow(std::string key, std::string flag, E Deployment::*member,
                Result<E> (*parse)(std::string_view), std::string (*name)(E),
                std::vector<std::string> words, std::string help, std::string example) {
    Field f;
    f.key = std::move(key);
    f.flag = std::move(flag);
    f.kind = FieldKind::Choice;
    f.defaultText = name(Deployment{}.*member);
    f.help = std::move(help);
    f.example = std::move(example);
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

/// A model or GPU reference: a preset id or a path.
Field referenceRow(std::string key, std::string flag, std::string Session::*member,
                   std::string help, std::string example) {
    Field f;
    f.key = std::move(key);
    f.flag = std::move(flag);
    f.kind = FieldKind::Text;
    f.group = FieldGroup::Selection;
    f.defaultText = Session{}.*member;
    f.help = std::move(help);
    f.example = std::move(example);
    f.jsonRule = "must be a non-empty string";
    f.set = [member](Session& s, std::string_view t, FieldNotes&) {
        s.*member = std::string(t);
        if (member == &Session::gpu)
            s.customGpu.reset(); // naming a GPU replaces the custom figures
    };
    f.get = [member](const Session& s) -> std::optional<std::string> {
        if (member == &Session::gpu && s.customGpu)
            return std::nullopt; // the custom rows carry it
        return s.*member;
    };
    return f;
}

/// A custom GPU figure: `scale` converts the flag's unit to GpuSpec's (TB/s → bytes/s).
/// `zeroIsNone`: 0 means "not known / not present" (fp8 peak, driver memory).
template <class T>
Field gpuRow(std::string key, std::string flag, T GpuSpec::*member, double scale, double max,
             bool zeroIsNone, std::string unit, std::string help, std::string example,
             std::string GpuSpec::*source = nullptr) {
    Field f;
    f.key = std::move(key);
    f.flag = std::move(flag);
    f.kind = std::is_integral_v<T> && scale == 1 ? FieldKind::Integer : FieldKind::Number;
    f.group = FieldGroup::CustomGpu;
    f.min = f.kind == FieldKind::Integer ? 1 : 0;
    f.max = max;
    f.unit = std::move(unit);
    f.help = std::move(help);
    f.example = std::move(example);
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

/// A custom GPU's text figure (its name, its link's name).
Field gpuTextRow(std::string key, std::string flag, std::string GpuSpec::*member, std::string help,
                 std::string example) {
    Field f;
    f.key = std::move(key);
    f.flag = std::move(flag);
    f.kind = FieldKind::Text;
    f.group = FieldGroup::CustomGpu;
    f.help = std::move(help);
    f.example = std::move(example);
    f.jsonRule = "must be a non-empty string";
    f.set = [member](Session& s, std::string_view t, FieldNotes&) {
        if (!s.customGpu)
            s.customGpu = blankGpu();
        (*s.customGpu).*member = std::string(t);
    };
    f.get = [member](const Session& s) -> std::optional<std::string> {
        if (!s.customGpu || ((*s.customGpu).*member).empty())
            return std::nullopt;
        return (*s.customGpu).*member;
    };
    return f;
}

/// Type-only JSON → text conversion and range checks shared by every row of a kind.
void finish(Field& f) {
    switch (f.kind) {
    case FieldKind::Integer:
        if (!f.check) {
            const double min = f.min, max = f.max;
            std::vector<std::string> words = f.words;
            f.check = [min, max, words](std::string_view t) -> std::string {
                for (const auto& w : words)
                    if (w == t)
                        return {};
                auto v = parseInteger(t);
                if (!v)
                    return "must be an integer, got " + quoted(t);
                if (static_cast<double>(*v) < min)
                    return min == 1 ? "must be a positive integer, got " + std::to_string(*v)
                                    : "must be at least " + integerText(min) + ", got " +
                                          std::to_string(*v);
                if (static_cast<double>(*v) > max)
                    return "must be at most " + integerText(max) + ", got " + std::to_string(*v);
                return {};
            };
        }
        if (!f.fromJson)
            f.fromJson = [words = f.words](const json& v) -> std::optional<std::string> {
                if (v.is_number_integer())
                    return std::to_string(v.get<std::int64_t>());
                if (v.is_string())
                    for (const auto& w : words)
                        if (w == v.get<std::string>())
                            return w;
                return std::nullopt;
            };
        break;
    case FieldKind::Number: {
        auto readable = [](double v) {
            return v == std::floor(v) ? integerText(v) : numberText(v);
        };
        const std::string shortRange = "(" + readable(f.min) + ", " + readable(f.max) + "]";
        if (!f.check) {
            const double min = f.min, max = f.max;
            std::vector<std::string> words = f.words;
            f.check = [min, max, words, shortRange](std::string_view t) -> std::string {
                for (const auto& w : words)
                    if (w == t)
                        return {};
                auto v = parseNumber(t);
                if (!v)
                    return "must be a number, got " + quoted(t);
                if (!(*v > min && *v <= max))
                    return "must be in " + shortRange + ", got " + numberText(*v);
                return {};
            };
        }
        const bool optional = f.defaultText.empty() && f.group == FieldGroup::Deployment;
        if (f.jsonRule.empty())
            f.jsonRule = "must be a number in " + shortRange + (optional ? " or null" : "");
        if (!f.fromJson)
            f.fromJson = [optional](const json& v) -> std::optional<std::string> {
                if (v.is_number())
                    return numberText(v.get<double>());
                if (v.is_null() && optional)
                    return std::string();
                return std::nullopt;
            };
        break;
    }
    case FieldKind::Choice:
    case FieldKind::Text:
        if (!f.check)
            f.check = [](std::string_view t) -> std::string {
                return t.empty() ? "must not be empty" : "";
            };
        if (!f.fromJson)
            f.fromJson = [](const json& v) -> std::optional<std::string> {
                if (v.is_string() && !v.get<std::string>().empty())
                    return v.get<std::string>();
                return std::nullopt;
            };
        break;
    }
    if (!f.toJson) {
        const FieldKind kind = f.kind;
        auto get = f.get;
        f.toJson = [kind, get](const Session& s) -> std::optional<json> {
            auto t = get(s);
            if (!t)
                return std::nullopt;
            if (kind == FieldKind::Integer) {
                if (auto n = parseInteger(*t))
                    return json(*n);
                return json(*t);
            }
            if (kind == FieldKind::Number)
                return json(parseNumber(*t).value_or(0));
            return json(*t);
        };
    }
}

std::vector<Field> buildSchema() {
    std::vector<Field> rows;
    // Selection.
    rows.push_back(referenceRow("model", "--model", &Session::model,
                                "model: a preset id (kvscope-cli models), a config.json or its "
                                "folder",
                                "deepseek-v3"));
    rows.push_back(referenceRow("gpu", "--gpu", &Session::gpu,
                                "GPU: a preset id (kvscope-cli gpus) or a GPU JSON file", "h200"));
    rows.back().jsonRule = "must be a preset id, a path or an object of GPU figures";

    // Deployment (core/law/law.h). The ranges are validate()'s; the engine rules that need the
    // model (TP divides the heads, DCP needs TP > h_kv, ...) stay in validate().
    rows.push_back(integerRow("tp", "--tp", &Deployment::tp, 1, kMaxTp, "ranks",
                              "tensor-parallel size (vLLM's --tensor-parallel-size)", "8"));
    rows.push_back(integerRow("dcp", "--dcp", &Deployment::dcp, 1, kMaxTp, "ranks",
                              "decode context parallel size (vLLM's "
                              "--decode-context-parallel-size)",
                              "2"));
    {
        Field f;
        f.key = "h_kv";
        f.flag = "--h-kv";
        f.kind = FieldKind::Integer;
        f.min = 1;
        f.max = static_cast<double>(kMaxHeads);
        f.unit = "heads";
        f.help = "what-if KV head count (a divisor of the query heads); latent: an MLA model's "
                 "latent cache; default: the model's own";
        f.words = {"latent", "mla", "auto"};
        f.example = "8";
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
        rows.push_back(std::move(f));
    }
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
    {
        Field f;
        f.key = "engine";
        f.flag = "--engine";
        f.kind = FieldKind::Text;
        f.defaultText = defaultEngine().text();
        f.help = "the engine and release whose rules size the pool: vllm[@VER] or sglang[@VER]; "
                 "no version: the newest modelled";
        f.example = "sglang@0.4.3";
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
        rows.push_back(std::move(f));
    }
    rows.push_back(integerRow("pp", "--pp", &Deployment::pp, 1, kMaxTp, "stages",
                              "pipeline-parallel size: the layers split into stages, each stage "
                              "its own pool",
                              "2"));
    rows.push_back(optionalNumberRow("mem_fraction_static", "--mem-fraction-static",
                                     &Deployment::memFractionStatic, 0, 1, "fraction",
                                     "SGLang's --mem-fraction-static; default: SGLang's own for "
                                     "the release and TP",
                                     "0.85"));

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
