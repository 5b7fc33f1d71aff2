// Config resolution, following vLLM's ModelArchConfigConvertor / SGLang's ModelConfig
// (docs/formulas.md §1). Every resolved number records the field it came from.
#include "core/model/model.h"

#include "core/format.h"
#include "core/jsonutil.h"
#include "core/model/layers.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

namespace kvscope {

using nlohmann::json;

std::string toString(AttentionKind k) {
    switch (k) {
    case AttentionKind::MHA:
        return "MHA";
    case AttentionKind::MQA:
        return "MQA";
    case AttentionKind::GQA:
        return "GQA";
    case AttentionKind::MLA:
        return "MLA";
    }
    return "?";
}

AttentionKind classifyHeads(std::int64_t qHeads, std::int64_t kvHeads) {
    if (kvHeads == qHeads)
        return AttentionKind::MHA;
    if (kvHeads == 1)
        return AttentionKind::MQA;
    return AttentionKind::GQA;
}

AttentionKind ModelSpec::attention() const {
    return mla ? AttentionKind::MLA : classifyHeads(qHeads.value, kvHeads.value);
}

std::int64_t ModelSpec::windowLayerCount() const {
    return std::count_if(layerWindow.begin(), layerWindow.end(),
                         [](std::int64_t w) { return w > 0; });
}

std::int64_t ModelSpec::keyDim() const {
    return mla ? qkNopeHeadDim.value + qkRopeHeadDim.value : headDim.value;
}

std::int64_t ModelSpec::valueDim() const {
    return mla ? vHeadDim.value : headDim.value;
}

namespace {

class Reader {
public:
    explicit Reader(const json& j) : j_(j) {}

    const json* find(const std::string& key) const {
        auto it = j_.find(key);
        if (it == j_.end() || it->is_null())
            return nullptr;
        return &*it;
    }

    /// First present, non-null field of `keys`; validated as a positive (or >= 0) integer.
    /// Returns nullopt-equivalent (found=false) when none is present.
    struct Int {
        bool found = false;
        std::int64_t value = 0;
        std::string key;
    };

    Result<Int> integer(std::initializer_list<const char*> keys, std::int64_t min,
                        std::int64_t max) const {
        for (const char* k : keys) {
            const json* v = find(k);
            if (!v)
                continue;
            std::int64_t out = 0;
            if (v->is_number_integer()) {
                if (v->is_number_unsigned() &&
                    v->get<std::uint64_t>() >
                        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                    return makeError(k, "must be at most " + std::to_string(max));
                out = v->get<std::int64_t>();
            } else if (v->is_number_float()) {
                const double d = v->get<double>();
                if (std::isnan(d))
                    return makeError(k, "must be an integer, got NaN");
                if (std::isinf(d))
                    return makeError(k, std::string("must be an integer, got ") +
                                            (d > 0 ? "Infinity" : "-Infinity"));
                if (d != std::floor(d) || std::fabs(d) > 9e15)
                    return makeError(k, "must be an integer, got " + v->dump());
                out = static_cast<std::int64_t>(d);
            } else {
                return makeError(k, std::string("must be an integer, got ") + jsonTypeName(*v));
            }
            if (out < min)
                return makeError(k, min == 1
                                        ? "must be a positive integer, got " + std::to_string(out)
                                        : "must be at least " + std::to_string(min) + ", got " +
                                              std::to_string(out));
            if (out > max)
                return makeError(k, "must be at most " + std::to_string(max) + ", got " +
                                        std::to_string(out));
            return Int{true, out, k};
        }
        return Int{};
    }

    Result<std::optional<bool>> boolean(const char* key) const {
        const json* v = find(key);
        if (!v)
            return std::optional<bool>{};
        if (!v->is_boolean())
            return makeError(key, std::string("must be true or false, got ") + jsonTypeName(*v));
        return std::optional<bool>{v->get<bool>()};
    }

    std::string string(const char* key) const {
        const json* v = find(key);
        return (v && v->is_string()) ? v->get<std::string>() : std::string();
    }

private:
    const json& j_;
};

std::string joinKeys(std::initializer_list<const char*> keys) {
    std::string out;
    for (const char* k : keys) {
        if (!out.empty())
            out += ", ";
        out += k;
    }
    return out;
}

bool isFalcon(const std::string& modelType) {
    return modelType == "falcon" || modelType == "RefinedWeb" || modelType == "RefinedWebModel";
}

bool plainMlpModel(const std::string& t) {
    static const char* kPlain[] = {
        "gpt_neox", "gpt_bigcode", "gpt2",  "falcon", "RefinedWeb", "RefinedWebModel",
        "gptj",     "opt",         "bloom", "mpt",    "phi",        "starcoder2"};
    return std::any_of(std::begin(kPlain), std::end(kPlain), [&](const char* p) { return t == p; });
}

bool biasedLinearModel(const std::string& t) {
    return t == "gpt_neox" || t == "gpt_bigcode" || t == "gpt2" || t == "starcoder2" || t == "phi";
}

/// One config being resolved: the language-model section (text_config when nested), its
/// readers, and the spec filled step by step.
struct ModelResolver {
    const json& root;
    const json* textConfig;
    const json& cfg;
    std::string prefix;
    Reader r, top;
    ModelSpec m;

    ModelResolver(const json& rootIn, const json* text)
        : root(rootIn), textConfig(text), cfg(text ? *text : rootIn),
          prefix(text ? "text_config." : ""), r(cfg), top(rootIn) {}

    Status required(Sourced<std::int64_t>& out, std::initializer_list<const char*> keys,
                    std::int64_t max) const {
        auto v = r.integer(keys, 1, max);
        if (!v.ok())
            return Error{prefix + v.error().field, v.error().rule};
        if (!v.value().found)
            return makeError(
                prefix + *keys.begin(),
                keys.size() > 1
                    ? "missing (also looked for " +
                          joinKeys(keys).substr(std::string(*keys.begin()).size() + 2) + ")"
                    : "missing");
        out = {v.value().value, prefix + v.value().key};
        return Ok{};
    }
    Status optional(Sourced<std::int64_t>& out, std::initializer_list<const char*> keys,
                    std::int64_t min, std::int64_t max) const {
        auto v = r.integer(keys, min, max);
        if (!v.ok())
            return Error{prefix + v.error().field, v.error().rule};
        if (v.value().found)
            out = {v.value().value, prefix + v.value().key};
        return Ok{};
    }
    /// Layers, heads and hidden size: required.
    Status basics();
    /// MLA latent, KV heads and head dim.
    Status attention();
    /// Vocabulary, MLP width, positions.
    Status vocabMlp();
    /// Routed and shared experts.
    Status moe();
    /// Tied embeddings and biases.
    Status embeddings();
    /// The checkpoint dtype and fp8 weights.
    Status dtype();
    /// Per-layer kinds, grouped as vLLM groups its KV cache (core/model/layers.h).
    Status layerKinds();
    /// Size bound, summary warnings and the weight layout.
    Status finish();
};

#define KV_CHECK(expr)                                                                             \
    if (auto s_ = (expr); !s_.ok())                                                                \
        return s_.error();

Status ModelResolver::basics() {
    KV_CHECK(
        required(m.layers, {"num_hidden_layers", "n_layer", "num_layers", "n_layers"}, kMaxLayers));
    KV_CHECK(required(m.qHeads, {"num_attention_heads", "n_head", "n_heads"}, kMaxHeads));
    KV_CHECK(required(m.hidden, {"hidden_size", "n_embd", "d_model"}, kMaxDim));
    return Ok{};
}

Status ModelResolver::attention() {
    // --- MLA ---------------------------------------------------------------------------------
    if (r.find("kv_lora_rank")) {
        m.mla = true;
        KV_CHECK(required(m.kvLoraRank, {"kv_lora_rank"}, kMaxDim));
        KV_CHECK(required(m.qkRopeHeadDim, {"qk_rope_head_dim"}, kMaxDim));
        KV_CHECK(required(m.qkNopeHeadDim, {"qk_nope_head_dim"}, kMaxDim));
        KV_CHECK(required(m.vHeadDim, {"v_head_dim"}, kMaxDim));
        m.qLoraRank = {0, "absent: queries are not compressed"};
        KV_CHECK(optional(m.qLoraRank, {"q_lora_rank"}, 1, kMaxDim));
        m.kvHeads = {1, prefix + "kv_lora_rank present: MLA caches one latent (engines allocate "
                                 "1 KV head)"};
        m.headDim = {m.qkNopeHeadDim.value + m.qkRopeHeadDim.value,
                     prefix + "qk_nope_head_dim + qk_rope_head_dim"};
    } else {
        // --- KV heads: multi_query, then the alias list, then the MHA fallback ---------------
        auto multiQuery = r.boolean("multi_query");
        if (!multiQuery.ok())
            return Error{prefix + multiQuery.error().field, multiQuery.error().rule};
        auto newDecoder = r.boolean("new_decoder_architecture");
        if (!newDecoder.ok())
            return Error{prefix + newDecoder.error().field, newDecoder.error().rule};
        const bool newDecoderFalcon = isFalcon(m.modelType) && newDecoder.value().value_or(false);
        if (!newDecoderFalcon && multiQuery.value().value_or(false)) {
            m.kvHeads = {1, prefix + "multi_query: true (one KV head)"};
        } else {
            auto v = r.integer({"n_head_kv", "num_kv_heads", "num_key_value_heads",
                                "multi_query_group_num", "num_attention_groups"},
                               1, kMaxHeads);
            if (!v.ok())
                return Error{prefix + v.error().field, v.error().rule};
            if (v.value().found)
                m.kvHeads = {v.value().value, prefix + v.value().key};
            else
                m.kvHeads = {m.qHeads.value,
                             "fallback: num_attention_heads (no KV-head field: MHA)"};
        }
        if (m.qHeads.value % m.kvHeads.value != 0)
            return makeError(m.kvHeads.source.substr(0, m.kvHeads.source.find(' ')),
                             "must divide num_attention_heads (" + std::to_string(m.qHeads.value) +
                                 "), got " + std::to_string(m.kvHeads.value));
        // --- Head dim: a declared head_dim first, then hidden / heads ----------------------
        KV_CHECK(optional(m.headDim, {"head_dim", "attention_head_dim"}, 1, kMaxDim));
        if (m.headDim.value == 0) {
            if (m.hidden.value % m.qHeads.value != 0)
                return makeError(prefix + "head_dim",
                                 "not declared, and hidden_size (" +
                                     std::to_string(m.hidden.value) +
                                     ") is not divisible by num_attention_heads (" +
                                     std::to_string(m.qHeads.value) + ")");
            m.headDim = {m.hidden.value / m.qHeads.value,
                         "fallback: hidden_size / num_attention_heads"};
        }
    }
    return Ok{};
}

Status ModelResolver::vocabMlp() {
    // --- Vocabulary, MLP width -------------------------------------------------------------
    KV_CHECK(optional(m.vocab, {"padded_vocab_size", "vocab_size"}, 1, kMaxVocab));
    if (m.vocab.value == 0 && (m.modelType == "gemma3_text" || m.modelType == "gemma3"))
        m.vocab = {262'208, "transformers' Gemma3TextConfig default vocab_size = 262208 (absent)"};
    if (m.vocab.value == 0) {
        m.vocab.source = "absent: embeddings not counted";
        m.warnings.push_back("vocab_size is missing: the parameter count leaves out embeddings");
    }
    m.gatedMlp = {!plainMlpModel(m.modelType),
                  plainMlpModel(m.modelType) ? "model_type " + m.modelType + ": plain 2-matrix MLP"
                                             : "gated MLP (gate, up, down)"};
    KV_CHECK(optional(m.intermediate,
                      {"intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim"}, 1,
                      kMaxDim * 16));
    if (m.intermediate.value == 0)
        m.intermediate = {4 * m.hidden.value, "fallback: 4 × hidden_size"};
    KV_CHECK(optional(m.maxPositionEmbeddings,
                      {"max_position_embeddings", "n_positions", "seq_length", "max_seq_len"}, 1,
                      std::numeric_limits<std::int32_t>::max()));
    if (m.maxPositionEmbeddings.value == 0 &&
        (m.modelType == "gemma3_text" || m.modelType == "gemma3"))
        m.maxPositionEmbeddings = {131'072, "transformers' Gemma3TextConfig default "
                                            "max_position_embeddings = 131072 (absent)"};
    return Ok{};
}

Status ModelResolver::moe() {
    // --- Mixture of experts ----------------------------------------------------------------
    KV_CHECK(optional(m.routedExperts, {"n_routed_experts", "num_local_experts", "num_experts"}, 0,
                      1 << 20));
    if (m.routedExperts.value > 0) {
        KV_CHECK(optional(m.expertsPerToken, {"num_experts_per_tok", "moe_topk", "top_k"}, 1,
                          m.routedExperts.value));
        if (m.expertsPerToken.value == 0)
            m.expertsPerToken = {std::min<std::int64_t>(2, m.routedExperts.value),
                                 "fallback: 2 experts per token"};
        KV_CHECK(optional(m.moeIntermediate, {"moe_intermediate_size"}, 1, kMaxDim * 16));
        if (m.moeIntermediate.value == 0)
            m.moeIntermediate = {m.intermediate.value, m.intermediate.source};
        KV_CHECK(optional(m.sharedExperts, {"n_shared_experts"}, 0, 1 << 16));
        Sourced<std::int64_t> sharedWidth;
        KV_CHECK(optional(sharedWidth, {"shared_expert_intermediate_size"}, 1, kMaxDim * 64));
        if (sharedWidth.value > 0 && m.sharedExperts.value == 0)
            m.sharedExperts = {
                std::max<std::int64_t>(1, sharedWidth.value / m.moeIntermediate.value),
                prefix + "shared_expert_intermediate_size / moe_intermediate_size"};
        KV_CHECK(optional(m.firstDenseLayers, {"first_k_dense_replace"}, 0, m.layers.value));
        m.moeLayerFreq = {1, "fallback: every layer"};
        KV_CHECK(
            optional(m.moeLayerFreq, {"moe_layer_freq", "decoder_sparse_step"}, 1, m.layers.value));
    }
    KV_CHECK(optional(m.mtpLayers, {"num_nextn_predict_layers", "mtp_num_hidden_layers"}, 0,
                      kMaxLayers));
    return Ok{};
}

Status ModelResolver::embeddings() {
    // --- Embeddings, biases ----------------------------------------------------------------
    {
        auto tied = r.boolean("tie_word_embeddings");
        if (!tied.ok())
            return Error{prefix + tied.error().field, tied.error().rule};
        if (!tied.value() && textConfig) {
            tied = top.boolean("tie_word_embeddings");
            if (!tied.ok())
                return tied.error();
        }
        if (tied.value())
            m.tiedEmbeddings = {*tied.value(), "tie_word_embeddings"};
        else
            m.tiedEmbeddings = {true, "fallback: transformers' default (tied)"};
    }
    {
        bool bias =
            biasedLinearModel(m.modelType) || m.modelType == "qwen2" || m.modelType == "qwen2_moe";
        std::string src = bias ? "model_type " + m.modelType : "fallback: no bias";
        for (const char* k : {"attention_bias", "add_qkv_bias", "qkv_bias", "bias"}) {
            auto b = r.boolean(k);
            if (b.ok() && b.value()) {
                bias = *b.value();
                src = prefix + k;
                break;
            }
        }
        m.qkvBias = {bias, src};
        bool mlpBias = biasedLinearModel(m.modelType);
        std::string mlpSrc = mlpBias ? "model_type " + m.modelType : "fallback: no bias";
        for (const char* k : {"mlp_bias", "add_bias_linear"}) {
            auto b = r.boolean(k);
            if (b.ok() && b.value()) {
                mlpBias = *b.value();
                mlpSrc = prefix + k;
                break;
            }
        }
        m.mlpBias = {mlpBias, mlpSrc};
    }
    return Ok{};
}

Status ModelResolver::dtype() {
    // --- dtype ------------------------------------------------------------------------------
    {
        std::string dt = r.string("torch_dtype");
        std::string src = prefix + "torch_dtype";
        if (dt.empty()) {
            dt = r.string("dtype");
            src = prefix + "dtype";
        }
        if (dt.empty() && textConfig) {
            dt = top.string("torch_dtype");
            src = "torch_dtype";
        }
        if (dt.empty()) {
            dt = "bfloat16";
            src = "fallback: bfloat16";
        }
        m.torchDtype = {dt, src};
        if (dt == "float32" || dt == "float") {
            m.servedDtypeBytes = 2;
            m.warnings.push_back("torch_dtype float32: served in 16-bit (2 bytes per element), "
                                 "as the engines' dtype=auto does");
        } else if (dt == "float16" || dt == "bfloat16" || dt == "half") {
            m.servedDtypeBytes = 2;
        } else {
            m.servedDtypeBytes = 2;
            m.warnings.push_back("torch_dtype '" + sanitizeForMessage(dt) +
                                 "' is unusual: assumed 16-bit");
        }
    }
    return Ok{};
}

Status ModelResolver::layerKinds() {
    // --- Per-layer kinds, grouped as vLLM groups its KV cache (core/model/layers.h)
    // ---------------
    {
        LayerResolveInput in;
        in.cfg = &cfg;
        in.root = &root;
        in.prefix = prefix;
        in.modelType = m.modelType;
        in.layers = m.layers.value;
        in.kvHeads = m.kvHeads.value;
        in.kvHeadsSource = m.kvHeads.source;
        in.headDim = m.headDim.value;
        in.mla = m.mla;
        in.latentDim = m.mla ? m.kvLoraRank.value + m.qkRopeHeadDim.value : 0;
        in.hidden = m.hidden.value;
        in.servedBytes = m.servedDtypeBytes;
        auto groups = resolveLayerGroups(in);
        if (!groups.ok())
            return groups.error();
        m.layerGroups = std::move(groups.value().groups);
        for (auto& w : groups.value().warnings)
            m.warnings.push_back(std::move(w));
        if (groups.value().mtpLayers > 0 && m.mtpLayers.value == 0)
            m.mtpLayers = {groups.value().mtpLayers, groups.value().mtpSource};
        m.layerWindow.assign(static_cast<std::size_t>(m.layers.value), 0);
        std::string kinds;
        for (const auto& g : m.layerGroups) {
            if ((g.kind == LayerKind::Sliding || g.kind == LayerKind::Chunked) && g.window)
                for (auto i : g.layers)
                    m.layerWindow[static_cast<std::size_t>(i)] = *g.window;
        }
        m.layerKindsSource = m.layerGroups.size() == 1
                                 ? "every layer " + toString(m.layerGroups[0].kind) + " (" +
                                       m.layerGroups[0].source + ")"
                                 : m.layerGroups.front().source;
        for (const auto& g : m.layerGroups)
            if (g.kind != LayerKind::Full && g.kind != LayerKind::Mla) {
                m.layerKindsSource = g.source;
                break;
            }
    }
    return Ok{};
}

Status ModelResolver::finish() {
    // Absurd sizes: a bound on the parameter count in floating point, so nothing downstream
    // (parameter counts, weight bytes) can overflow 64-bit integers.
    {
        const double d = static_cast<double>(m.hidden.value);
        const double dh = static_cast<double>(std::max(m.headDim.value, m.vHeadDim.value));
        const double heads = static_cast<double>(m.qHeads.value + 2 * m.kvHeads.value);
        const double experts =
            static_cast<double>(m.routedExperts.value + m.sharedExperts.value + 1);
        const double ffn =
            static_cast<double>(std::max(m.intermediate.value, m.moeIntermediate.value));
        const double lora = static_cast<double>(m.kvLoraRank.value + m.qLoraRank.value);
        const double bound =
            static_cast<double>(m.layers.value) *
                (2 * d * heads * dh + 3 * experts * d * ffn + lora * (d + heads * dh)) +
            2 * static_cast<double>(m.vocab.value) * d;
        if (bound > 1e15)
            return makeError(prefix + "hidden_size",
                             "the sizes are absurd: they describe over 10^15 parameters");
    }
    for (LayerKind kind : {LayerKind::Sliding, LayerKind::Chunked}) {
        std::int64_t n = 0, w = 0;
        for (const auto& g : m.layerGroups)
            if (g.kind == kind) {
                n += g.count();
                w = std::max(w, g.window.value_or(0));
            }
        if (n > 0)
            m.warnings.push_back(std::string(kind == LayerKind::Sliding ? "sliding window: "
                                                                        : "chunked local "
                                                                          "attention: ") +
                                 std::to_string(n) + " of " + std::to_string(m.layers.value) +
                                 " layers keep at most " + withCommas(w) + " tokens per request");
    }
    if (m.mtpLayers.value > 0)
        m.warnings.push_back(std::to_string(m.mtpLayers.value) +
                             " multi-token-prediction layer(s) (" + m.mtpLayers.source +
                             ") not counted in the parameters nor the KV cache: engines allocate "
                             "their KV only with speculative decoding");
    auto weights = resolveWeightSpec(root, m);
    if (!weights.ok())
        return weights.error();
    m.weights = std::move(weights.value());
    // Only a dense MLP layer uses intermediate_size (all-MoE models such as DeepSeek-V4 omit it).
    const bool dense =
        std::find(m.weights.ffn.begin(), m.weights.ffn.end(), Ffn::Dense) != m.weights.ffn.end();
    if (m.intermediate.source.rfind("fallback", 0) == 0 && m.gatedMlp.value && dense)
        m.warnings.push_back("intermediate_size is missing: assumed 4 × hidden_size for the "
                             "parameter count");
    return Ok{};
}

Result<ModelSpec> resolve(const json& root, const std::string& name) {
    if (!root.is_object())
        return makeError("config.json", "must be a JSON object");
    // Multimodal configs nest the language model under text_config.
    const json* textConfig = nullptr;
    if (auto it = root.find("text_config"); it != root.end() && it->is_object())
        textConfig = &*it;
    ModelResolver res(root, textConfig);
    Reader& r = res.r;
    Reader& top = res.top;
    ModelSpec& m = res.m;
    m.name = name;
    m.modelType = r.string("model_type");
    if (m.modelType.empty())
        m.modelType = top.string("model_type");
    if (const json* a = top.find("architectures");
        a && a->is_array() && !a->empty() && (*a)[0].is_string())
        m.architecture = (*a)[0].get<std::string>();
    for (auto step : {&ModelResolver::basics, &ModelResolver::attention, &ModelResolver::vocabMlp,
                      &ModelResolver::moe, &ModelResolver::embeddings, &ModelResolver::dtype,
                      &ModelResolver::layerKinds, &ModelResolver::finish})
        KV_CHECK((res.*step)());
    return std::move(res.m);
}

} // namespace

Result<ModelSpec> parseModelConfig(std::string_view jsonText, const std::string& name) {
    auto root = parseJsonBounded(jsonText, "config.json", kMaxConfigBytes, kMaxJsonDepth);
    if (!root.ok())
        return root.error();
    try {
        return resolve(root.value(), name);
    } catch (const std::exception& e) {
        return makeError("config.json", std::string("unexpected content: ") + e.what());
    }
}

Result<ModelSpec> loadModelConfigFile(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path p(path);
    if (fs::is_directory(p, ec))
        p /= "config.json";
    if (!fs::exists(p, ec))
        return makeError("model", "no such preset or file: " + path);
    if (!fs::is_regular_file(p, ec))
        return makeError("model", "not a regular file: " + p.string());
    auto text = readFileBounded(p.string(), "config.json", kMaxConfigBytes);
    if (!text.ok())
        return text.error();
    // Name: the folder for ".../Llama-3-8B/config.json", else the stem ("org__model.json").
    std::string name = p.stem().string();
    if (name == "config" && p.has_parent_path()) {
        name = p.parent_path().filename().string();
        // Hugging Face cache: hub/models--org--name/snapshots/<hash>/config.json
        const fs::path snapshots = p.parent_path().parent_path();
        if (snapshots.filename() == "snapshots") {
            std::string repo = snapshots.parent_path().filename().string();
            if (repo.rfind("models--", 0) == 0) {
                repo = repo.substr(8);
                if (auto sep = repo.find("--"); sep != std::string::npos)
                    repo.replace(sep, 2, "/");
                name = repo;
            }
        }
    }
    if (name.empty() || name == ".")
        name = "config";
    return parseModelConfig(text.value(), name);
}

} // namespace kvscope
