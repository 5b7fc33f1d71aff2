// Quantization configs as the checkpoints write them, and the bytes the engines hold for them.
// Sources per format:
//  fp8        — vLLM quantization/fp8.py: fp8 weights, fp32 `weight_scale_inv` per 128 × 128
//               block when `weight_block_size` is set (DeepSeek-V3), else one fp32 scale per
//               tensor; `ignored_layers`/`modules_to_not_convert` stay 16-bit.
//  mxfp4      — vLLM quantization/mxfp4.py: uint8 pairs of e2m1 values plus one e8m0 scale per
//               32 (`mxfp4_block = 32`), MoE layers only (linear layers: UnquantizedLinearMethod).
//  nvfp4      — ModelOpt (vLLM quantization/modelopt.py ModelOptNvFp4LinearMethod): e2m1 pairs,
//               one fp8-e4m3 scale per `group_size` (16), fp32 `weight_scale_2` and
//               `input_scale` per tensor.
//  compressed-tensors — vLLM compressed_tensors schemes: W8A8 int8/fp8 with a fp32 scale per
//               output channel (or tensor); WNA16 packs int4 into int32 with a 16-bit scale per
//               group and, when asymmetric, packed int32 zero points.
//  gptq / awq — vLLM gptq_marlin.py / awq_marlin.py: int4 in int32, fp16 scales per group,
//               zero points packed like the values (GPTQ symmetric: none after Marlin repack).
//  bitsandbytes — nf4/fp4: 4-bit values, one fp32 absmax per 64 (bnb_4bit blocksize), or one
//               int8 absmax per 64 with double quantization; 8-bit: int8 with a fp32 scale per row.
#include "core/model/quant.h"

#include "core/jsonutil.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <unordered_map>

namespace kvscope {

using nlohmann::json;

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

const json* member(const json& o, const char* key) {
    auto it = o.find(key);
    if (it == o.end() || it->is_null())
        return nullptr;
    return &*it;
}

Result<std::string> optString(const json& o, const char* key, const std::string& field) {
    const json* v = member(o, key);
    if (!v)
        return std::string();
    if (!v->is_string())
        return makeError(field + "." + key,
                         std::string("must be a string, got ") + jsonTypeName(*v));
    return v->get<std::string>();
}

Result<std::int64_t> optInt(const json& o, const char* key, const std::string& field,
                            std::int64_t fallback, std::int64_t min, std::int64_t max) {
    const json* v = member(o, key);
    if (!v)
        return fallback;
    if (!v->is_number_integer())
        return makeError(field + "." + key,
                         std::string("must be an integer, got ") + jsonTypeName(*v));
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(max))
        return makeError(field + "." + key, "must be at most " + std::to_string(max));
    const std::int64_t n = v->get<std::int64_t>();
    if (n < min || n > max)
        return makeError(field + "." + key, "must be between " + std::to_string(min) + " and " +
                                                std::to_string(max) + ", got " + std::to_string(n));
    return n;
}

Result<std::optional<bool>> optBool(const json& o, const char* key, const std::string& field) {
    const json* v = member(o, key);
    if (!v)
        return std::optional<bool>{};
    if (!v->is_boolean())
        return makeError(field + "." + key,
                         std::string("must be true or false, got ") + jsonTypeName(*v));
    return std::optional<bool>{v->get<bool>()};
}

/// Reads the first present list of module names among `keys` into q.ignore.
Status readIgnore(const json& o, std::initializer_list<const char*> keys, const std::string& field,
                  QuantSpec& q) {
    for (const char* k : keys) {
        const json* v = member(o, k);
        if (!v)
            continue;
        if (!v->is_array())
            return makeError(field + "." + k,
                             std::string("must be an array of module names, got ") +
                                 jsonTypeName(*v));
        if (v->size() > 100000)
            return makeError(field + "." + k, "has more than 100,000 entries");
        for (std::size_t i = 0; i < v->size(); ++i) {
            const json& e = (*v)[i];
            if (!e.is_string())
                return makeError(field + "." + k + "[" + std::to_string(i) + "]",
                                 std::string("must be a string, got ") + jsonTypeName(e));
            std::string s = e.get<std::string>();
            if (s.rfind("re:", 0) == 0) {
                try {
                    std::regex test(s.substr(3));
                } catch (const std::regex_error&) {
                    return makeError(field + "." + k + "[" + std::to_string(i) + "]",
                                     "is not a valid regular expression: " + s);
                }
            }
            q.ignore.push_back(std::move(s));
        }
        q.ignoreField = field + "." + k;
        return Ok{};
    }
    return Ok{};
}

QuantScheme fp8Scheme(std::int64_t blockRows, std::int64_t blockCols, bool perChannel) {
    QuantScheme s;
    s.name = "fp8";
    s.weightBits = 8;
    s.scaleBytes = 4;
    s.blockRows = blockRows;
    s.blockCols = blockCols;
    s.groupSize = perChannel ? 0 : -1;
    return s;
}

QuantScheme nvfp4Scheme(std::int64_t group) {
    QuantScheme s;
    s.name = "nvfp4";
    s.weightBits = 4;
    s.groupSize = group;
    s.scaleBytes = 1;     // fp8-e4m3 block scale
    s.perTensorBytes = 8; // fp32 weight_scale_2 + fp32 input_scale
    return s;
}

QuantScheme mxfp4Scheme() {
    QuantScheme s;
    s.name = "mxfp4";
    s.weightBits = 4;
    s.groupSize = 32;
    s.scaleBytes = 1; // e8m0
    s.expertsOnly = true;
    return s;
}

/// DeepSeek-V4's `expert_dtype` (vLLM models/deepseek_v4.py DeepseekV4FP8Config): "fp4" routes
/// the MoE layers to Mxfp4MoEMethod (e2m1 pairs, one e8m0 scale per 32) beside the fp8 block
/// linears; "fp8" keeps the experts in the fp8 scheme; anything else vLLM refuses.
Status parseExpertDtype(const json& root, QuantSpec& q) {
    const json* v = member(root, "expert_dtype");
    std::string field = "expert_dtype";
    if (!v) {
        if (const json* t = member(root, "text_config"); t && t->is_object()) {
            v = member(*t, "expert_dtype");
            field = "text_config.expert_dtype";
        }
    }
    if (!v)
        return Ok{};
    if (!v->is_string() || (v->get<std::string>() != "fp4" && v->get<std::string>() != "fp8"))
        return makeError(field,
                         "must be \"fp4\" or \"fp8\" (vLLM deepseek_v4.py), got " + v->dump());
    if (v->get<std::string>() == "fp8")
        return Ok{};
    q.expertScheme = mxfp4Scheme();
    q.expertScheme.expertsOnly = false;
    q.expertSource = "config.json " + field + " = \"fp4\" (vLLM deepseek_v4.py: Mxfp4MoEMethod)";
    return Ok{};
}

QuantScheme intScheme(int bits, std::int64_t group, bool zeros, int scaleBytes) {
    QuantScheme s;
    s.name = "int" + std::to_string(bits);
    s.weightBits = bits;
    s.groupSize = group;
    s.scaleBytes = scaleBytes;
    s.zeroPoints = zeros;
    s.zeroBits = zeros ? bits : 0;
    return s;
}

Status parseFp8(const json& qc, const std::string& f, QuantSpec& q) {
    std::int64_t br = 0, bc = 0;
    if (const json* b = member(qc, "weight_block_size")) {
        if (!b->is_array() || b->size() != 2 || !(*b)[0].is_number_integer() ||
            !(*b)[1].is_number_integer() || (*b)[0].get<std::int64_t>() <= 0 ||
            (*b)[1].get<std::int64_t>() <= 0 || (*b)[0].get<std::int64_t>() > (1 << 20) ||
            (*b)[1].get<std::int64_t>() > (1 << 20))
            return makeError(f + ".weight_block_size",
                             "must be two positive integers [rows, cols], got " + b->dump());
        br = (*b)[0].get<std::int64_t>();
        bc = (*b)[1].get<std::int64_t>();
    }
    q.scheme = fp8Scheme(br, bc, false);
    return readIgnore(qc, {"ignored_layers", "modules_to_not_convert", "ignore"}, f, q);
}

Status parseModelOpt(const json& qc, const std::string& f, QuantSpec& q) {
    auto algo = optString(qc, "quant_algo", f);
    if (!algo.ok())
        return algo.error();
    const std::string a = lower(algo.value());
    if (a.empty())
        return makeError(f + ".quant_algo", "missing (ModelOpt names NVFP4 or FP8 there)");
    q.method = algo.value();
    if (a == "nvfp4") {
        auto g = optInt(qc, "group_size", f, 16, 1, 1 << 16);
        if (!g.ok())
            return g.error();
        q.scheme = nvfp4Scheme(g.value());
    } else if (a == "fp8") {
        q.scheme = fp8Scheme(0, 0, false);
    } else if (a == "fp8_pb_wo" || a == "fp8_block") {
        q.scheme = fp8Scheme(128, 128, false);
    } else {
        return makeError(f + ".quant_algo",
                         "unsupported '" + algo.value() + "' (supported: NVFP4, FP8)");
    }
    auto kv = optString(qc, "kv_cache_quant_algo", f);
    if (!kv.ok())
        return kv.error();
    q.kvCacheDtype = kv.value();
    return readIgnore(qc, {"exclude_modules", "ignore", "modules_to_not_convert"}, f, q);
}

Status parseCompressedTensors(const json& qc, const std::string& f, QuantSpec& q) {
    const json* groups = member(qc, "config_groups");
    if (!groups || !groups->is_object() || groups->empty())
        return makeError(f + ".config_groups",
                         groups ? std::string("must be a non-empty object, got ") +
                                      jsonTypeName(*groups)
                                : std::string("missing"));
    // The engines apply the group whose targets match a module; checkpoints in practice carry
    // one group for "Linear". Use the first group that quantizes weights.
    for (auto it = groups->begin(); it != groups->end(); ++it) {
        const std::string gf = f + ".config_groups." + it.key();
        if (!it->is_object())
            return makeError(gf, std::string("must be an object, got ") + jsonTypeName(*it));
        const json* w = member(*it, "weights");
        if (!w)
            continue;
        if (!w->is_object())
            return makeError(gf + ".weights",
                             std::string("must be an object, got ") + jsonTypeName(*w));
        const std::string wf = gf + ".weights";
        auto bits = optInt(*w, "num_bits", wf, 0, 1, 16);
        if (!bits.ok())
            return bits.error();
        if (bits.value() != 4 && bits.value() != 8)
            return makeError(wf + ".num_bits",
                             "must be 4 or 8, got " + std::to_string(bits.value()));
        auto type = optString(*w, "type", wf);
        if (!type.ok())
            return type.error();
        auto strategy = optString(*w, "strategy", wf);
        if (!strategy.ok())
            return strategy.error();
        auto group = optInt(*w, "group_size", wf, 0, -1, 1 << 20);
        if (!group.ok())
            return group.error();
        auto sym = optBool(*w, "symmetric", wf);
        if (!sym.ok())
            return sym.error();
        const std::string st = lower(strategy.value().empty() ? "tensor" : strategy.value());
        const bool isFloat = lower(type.value()) == "float";
        std::int64_t g = -1;
        if (st == "channel")
            g = 0;
        else if (st == "group" || st == "tensor_group") {
            if (group.value() <= 0)
                return makeError(wf + ".group_size", "must be a positive integer with strategy '" +
                                                         strategy.value() + "'");
            g = group.value();
        } else if (st == "block") {
            const json* b = member(*w, "block_structure");
            if (!b || !b->is_array() || b->size() != 2 || !(*b)[0].is_number_integer() ||
                !(*b)[1].is_number_integer() || (*b)[0].get<std::int64_t>() <= 0 ||
                (*b)[1].get<std::int64_t>() <= 0)
                return makeError(wf + ".block_structure",
                                 "must be two positive integers with strategy 'block'");
            q.scheme = fp8Scheme((*b)[0].get<std::int64_t>(), (*b)[1].get<std::int64_t>(), false);
        } else if (st != "tensor") {
            return makeError(wf + ".strategy", "unsupported '" + strategy.value() +
                                                   "' (supported: tensor, channel, group, block)");
        }
        if (st != "block") {
            if (isFloat && bits.value() == 8)
                q.scheme = fp8Scheme(0, 0, g == 0);
            else if (isFloat && bits.value() == 4)
                q.scheme = nvfp4Scheme(g > 0 ? g : 16);
            else
                // int8 channel/tensor scales are fp32 (CompressedTensorsW8A8Int8); WNA16 group
                // scales keep the model's 16-bit dtype (CompressedTensorsWNA16).
                q.scheme = intScheme(static_cast<int>(bits.value()), g, !sym.value().value_or(true),
                                     g > 0 ? 2 : 4);
        }
        q.method =
            "compressed-tensors " +
            std::string(bits.value() == 4 ? (isFloat ? "nvfp4" : "w4a16")
                                          : (member(*it, "input_activations") ? "w8a8" : "w8a16")) +
            (isFloat && bits.value() == 8 ? " fp8" : "");
        return readIgnore(qc, {"ignore"}, f, q);
    }
    return makeError(f + ".config_groups", "no group quantizes weights");
}

Status parseGptqAwq(const json& qc, const std::string& f, const std::string& method, QuantSpec& q) {
    const bool awq = method == "awq";
    auto bits = optInt(qc, awq ? "w_bit" : "bits", f, -1, 2, 8);
    if (!bits.ok())
        return bits.error();
    std::int64_t b = bits.value();
    if (b < 0) {
        auto alt = optInt(qc, "bits", f, 4, 2, 8);
        if (!alt.ok())
            return alt.error();
        b = alt.value();
    }
    if (b != 2 && b != 3 && b != 4 && b != 8)
        return makeError(f + (awq ? ".w_bit" : ".bits"),
                         "must be 2, 3, 4 or 8, got " + std::to_string(b));
    auto group = optInt(qc, awq ? "q_group_size" : "group_size", f, -2, -1, 1 << 20);
    if (!group.ok())
        return group.error();
    std::int64_t g = group.value();
    if (g == -2) {
        auto alt = optInt(qc, "group_size", f, 128, -1, 1 << 20);
        if (!alt.ok())
            return alt.error();
        g = alt.value();
    }
    if (g == 0)
        return makeError(f + ".group_size", "must be -1 (per channel) or positive, got 0");
    bool zeros = awq;
    if (awq) {
        auto z = optBool(qc, "zero_point", f);
        if (!z.ok())
            return z.error();
        zeros = z.value().value_or(true);
    } else {
        auto s = optBool(qc, "sym", f);
        if (!s.ok())
            return s.error();
        zeros = !s.value().value_or(true);
    }
    q.scheme = intScheme(static_cast<int>(b), g == -1 ? 0 : g, zeros, 2);
    return readIgnore(qc, {"modules_to_not_convert", "modules_in_block_to_quantize_not"}, f, q);
}

Status parseBnb(const json& qc, const std::string& f, QuantSpec& q) {
    auto four = optBool(qc, "load_in_4bit", f);
    if (!four.ok())
        return four.error();
    auto eight = optBool(qc, "load_in_8bit", f);
    if (!eight.ok())
        return eight.error();
    if (four.value().value_or(false)) {
        auto type = optString(qc, "bnb_4bit_quant_type", f);
        if (!type.ok())
            return type.error();
        auto dq = optBool(qc, "bnb_4bit_use_double_quant", f);
        if (!dq.ok())
            return dq.error();
        QuantScheme s = intScheme(4, 64, false, dq.value().value_or(false) ? 1 : 4);
        s.name = type.value().empty() ? "fp4" : lower(type.value());
        if (s.name != "nf4" && s.name != "fp4")
            return makeError(f + ".bnb_4bit_quant_type",
                             "must be nf4 or fp4, got '" + type.value() + "'");
        q.scheme = s;
    } else if (eight.value().value_or(false)) {
        q.scheme = intScheme(8, 0, false, 4);
    } else {
        return makeError(f + ".load_in_4bit", "bitsandbytes needs load_in_4bit or load_in_8bit");
    }
    return readIgnore(qc, {"llm_int8_skip_modules", "modules_to_not_convert"}, f, q);
}

std::string globToRegex(const std::string& glob) {
    std::string re;
    for (char c : glob) {
        if (c == '*')
            re += ".*";
        else if (c == '?')
            re += '.';
        else if (std::string("\\^$.|+()[]{}").find(c) != std::string::npos)
            re += std::string("\\") + c;
        else
            re += c;
    }
    return re;
}

} // namespace

Result<QuantSpec> parseQuantization(const json& root, const json* hfQuant) {
    QuantSpec q;
    if (hfQuant) {
        const std::string f = "hf_quant_config.json";
        if (!hfQuant->is_object())
            return makeError(f, "must be a JSON object");
        const json* quant = member(*hfQuant, "quantization");
        if (!quant || !quant->is_object())
            return makeError(f + ".quantization", quant ? "must be an object" : "missing");
        q.source = f + " (ModelOpt)";
        if (auto s = parseModelOpt(*quant, f + ".quantization", q); !s.ok())
            return s.error();
        q.present = true;
        return q;
    }
    std::string f = "quantization_config";
    const json* qc = member(root, "quantization_config");
    if (!qc) {
        if (const json* t = member(root, "text_config"); t && t->is_object()) {
            qc = member(*t, "quantization_config");
            f = "text_config.quantization_config";
        }
    }
    if (!qc)
        return q;
    if (!qc->is_object())
        return makeError(f, std::string("must be an object, got ") + jsonTypeName(*qc));
    auto methodText = optString(*qc, "quant_method", f);
    if (!methodText.ok())
        return methodText.error();
    const std::string method = lower(methodText.value());
    q.method = methodText.value();
    q.source = "config.json " + f;
    Status s = Ok{};
    if (method == "fp8" || method == "fbgemm_fp8")
        s = parseFp8(*qc, f, q);
    else if (method == "mxfp4") {
        q.scheme = mxfp4Scheme();
        s = readIgnore(*qc, {"modules_to_not_convert", "ignored_layers"}, f, q);
    } else if (method == "modelopt" || method == "modelopt_fp4")
        s = parseModelOpt(member(*qc, "quantization") && (*qc)["quantization"].is_object()
                              ? (*qc)["quantization"]
                              : *qc,
                          f, q);
    else if (method == "compressed-tensors" || method == "compressed_tensors")
        s = parseCompressedTensors(*qc, f, q);
    else if (method == "gptq" || method == "awq")
        s = parseGptqAwq(*qc, f, method, q);
    else if (method == "bitsandbytes")
        s = parseBnb(*qc, f, q);
    else if (method.empty())
        return makeError(f + ".quant_method", "missing");
    else
        return makeError(f + ".quant_method",
                         "unsupported '" + methodText.value() +
                             "' (supported: fp8, mxfp4, modelopt, compressed-tensors, gptq, awq, "
                             "bitsandbytes)");
    if (!s.ok())
        return s.error();
    if (auto e = parseExpertDtype(root, q); !e.ok())
        return e.error();
    q.present = true;
    return q;
}

namespace {

/// Compiled patterns, kept per thread: a sweep evaluates the same ignore list many times.
const std::regex* compiled(const std::string& pattern) {
    thread_local std::unordered_map<std::string, std::optional<std::regex>> cache;
    auto it = cache.find(pattern);
    if (it == cache.end()) {
        std::optional<std::regex> re;
        try {
            re = pattern.rfind("re:", 0) == 0 ? std::regex(pattern.substr(3))
                                              : std::regex(globToRegex(pattern) + "(\\..*)?");
        } catch (const std::regex_error&) {
        }
        if (cache.size() > 4096)
            cache.clear();
        it = cache.emplace(pattern, std::move(re)).first;
    }
    return it->second ? &*it->second : nullptr;
}

} // namespace

bool quantIgnores(const QuantSpec& q, const std::string& module) {
    for (const std::string& p : q.ignore) {
        if (p.rfind("re:", 0) == 0) {
            if (const std::regex* re = compiled(p); re && std::regex_search(module, *re))
                return true;
            continue;
        }
        if (p.find('*') != std::string::npos || p.find('?') != std::string::npos) {
            // ModelOpt / gpt-oss globs name a module or a parent of it.
            if (const std::regex* re = compiled(p); re && std::regex_match(module, *re))
                return true;
            continue;
        }
        // transformers: `key in module_name`, on dotted-component boundaries.
        std::size_t pos = module.find(p);
        while (pos != std::string::npos) {
            const bool startOk = pos == 0 || module[pos - 1] == '.';
            const std::size_t end = pos + p.size();
            const bool endOk = end == module.size() || module[end] == '.';
            if (startOk && endOk)
                return true;
            pos = module.find(p, pos + 1);
        }
    }
    return false;
}

std::int64_t quantizedTensorBytes(const QuantScheme& s, std::int64_t rows, std::int64_t cols) {
    auto ceilDiv = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
    const std::int64_t values = ceilDiv(rows * cols * s.weightBits, 8);
    std::int64_t scales = 0;
    if (s.blockRows > 0 && s.blockCols > 0)
        scales = ceilDiv(rows, s.blockRows) * ceilDiv(cols, s.blockCols);
    else if (s.groupSize > 0)
        scales = rows * ceilDiv(cols, s.groupSize);
    else if (s.groupSize == 0)
        scales = rows;
    else
        scales = 1;
    std::int64_t zeros = s.zeroPoints ? ceilDiv(scales * s.zeroBits, 8) : 0;
    return values + scales * s.scaleBytes + zeros + s.perTensorBytes;
}

QuantScheme overrideScheme(const std::string& name) {
    if (name == "fp8")
        return fp8Scheme(0, 0, true);
    if (name == "int8")
        return intScheme(8, 0, false, 4);
    if (name == "int4")
        return intScheme(4, 128, false, 2);
    if (name == "mxfp4") {
        QuantScheme s = mxfp4Scheme();
        s.expertsOnly = false;
        return s;
    }
    if (name == "nvfp4")
        return nvfp4Scheme(16);
    return {};
}

std::string QuantSpec::describe() const {
    if (!present)
        return "none";
    std::string out = scheme.name;
    if (scheme.blockRows > 0)
        out += " (" + std::to_string(scheme.blockRows) + "×" + std::to_string(scheme.blockCols) +
               " blocks)";
    else if (scheme.groupSize > 0)
        out += " (group " + std::to_string(scheme.groupSize) + ")";
    else if (scheme.groupSize == 0)
        out += " (per channel)";
    else
        out += " (per tensor)";
    if (scheme.expertsOnly)
        out += ", experts only";
    if (!expertScheme.name.empty())
        out += "; experts " + expertScheme.name + " (group " +
               std::to_string(expertScheme.groupSize) + ")";
    return out;
}

} // namespace kvscope
