// Parameter counting from config shapes: one WeightTensor per weight of every layer, from the
// layer layout in ModelSpec::weights (core/model/weightspec.h). Conventions (checked against
// published totals in tests/tst_model.cpp and tests/tst_weights.cpp): linear layers
// d_in × d_out (+ d_out bias where the architecture has biases); norms d per norm (one per
// sub-block + 1 final; LayerNorm-with-bias models count 2·d); MoE layers hold routed + shared
// experts (3 matrices each) and a d × E router; MTP layers and the vision tower are counted
// apart from the language model.
#include "core/model/params.h"

#include "core/model/weights.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

namespace kvscope {

namespace {

struct Builder {
    std::vector<WeightTensor>& out;
    std::int64_t layer = -1;
    std::string prefix;
    void add(const std::string& name, TensorRole role, std::int64_t rows, std::int64_t cols,
             std::int64_t count = 1, bool linear = true, bool kv = false) {
        if (rows <= 0 || cols <= 0 || count <= 0)
            return;
        out.push_back({prefix + name, role, rows, cols, count, linear, kv, layer});
    }
    void vec(const std::string& name, TensorRole role, std::int64_t n) {
        add(name, role, n, 1, 1, false);
    }
};

void addMlp(Builder& b, const ModelSpec& m, const std::string& name, TensorRole role,
            std::int64_t width, std::int64_t count) {
    const std::int64_t d = m.hidden.value;
    const bool gated = m.gatedMlp.value && !m.weights.plainMlp;
    if (gated) {
        b.add(name + ".gate_proj", role, width, d, count);
        b.add(name + ".up_proj", role, width, d, count);
    } else {
        b.add(name + ".up_proj", role, width, d, count);
    }
    b.add(name + ".down_proj", role, d, width, count);
    if (m.mlpBias.value) {
        b.add(name + ".bias", role, (gated ? 2 * width : width) + d, 1, count, false);
    }
}

void addAttention(Builder& b, const ModelSpec& m, std::int64_t kvHeads, bool cross) {
    const WeightSpec& w = m.weights;
    const std::int64_t d = m.hidden.value, h = m.qHeads.value;
    const std::string a = cross ? "cross_attn." : "self_attn.";
    if (w.oLoraRank > 0) {
        // DeepSeek-V4: low-rank queries, one shared KV head, grouped low-rank output.
        const std::int64_t dh = m.headDim.value, qr = w.qLora;
        if (qr > 0) {
            b.add(a + "q_a_proj", TensorRole::Attention, qr, d);
            b.vec(a + "q_a_layernorm", TensorRole::Norm, qr);
            b.add(a + "q_b_proj", TensorRole::Attention, h * dh, qr);
        } else {
            b.add(a + "q_proj", TensorRole::Attention, h * dh, d);
        }
        b.add(a + "kv_proj", TensorRole::Attention, m.kvHeads.value * dh, d, 1, true, true);
        b.vec(a + "kv_norm", TensorRole::Norm, dh);
        b.add(a + "o_a_proj", TensorRole::Attention, w.oLoraRank, h * dh / w.oGroups, w.oGroups);
        b.add(a + "o_b_proj", TensorRole::Attention, d, w.oGroups * w.oLoraRank);
    } else if (m.mla && kvHeads <= 0) {
        const std::int64_t qk = m.qkNopeHeadDim.value + m.qkRopeHeadDim.value;
        const std::int64_t qLora = m.qLoraRank.value, r = m.kvLoraRank.value;
        if (qLora > 0) {
            b.add(a + "q_a_proj", TensorRole::Attention, qLora, d);
            b.vec(a + "q_a_layernorm", TensorRole::Attention, qLora);
            b.add(a + "q_b_proj", TensorRole::Attention, h * qk, qLora);
        } else {
            b.add(a + "q_proj", TensorRole::Attention, h * qk, d);
        }
        b.add(a + "kv_a_proj_with_mqa", TensorRole::Attention, r + m.qkRopeHeadDim.value, d, 1,
              true, true);
        b.vec(a + "kv_a_layernorm", TensorRole::Attention, r);
        b.add(a + "kv_b_proj", TensorRole::Attention,
              h * (m.qkNopeHeadDim.value + m.vHeadDim.value), r, 1, true, true);
        b.add(a + "o_proj", TensorRole::Attention, d, h * m.vHeadDim.value);
    } else {
        const std::int64_t hkv = kvHeads > 0 ? kvHeads : m.kvHeads.value;
        const std::int64_t dk = m.keyDim(), dv = m.valueDim();
        const std::int64_t gate = w.attnOutputGate ? 2 : 1; // Qwen3.5: q_proj emits the gate too
        b.add(a + "q_proj", TensorRole::Attention, h * dk * gate, d);
        b.add(a + "k_proj", TensorRole::Attention, hkv * dk, d, 1, true, true);
        b.add(a + "v_proj", TensorRole::Attention, hkv * dv, d, 1, true, true);
        b.add(a + "o_proj", TensorRole::Attention, d, h * dv);
        if (m.qkvBias.value)
            b.add(a + "qkv_bias", TensorRole::Attention, h * dk + hkv * (dk + dv), 1, 1, false);
        if (m.mlpBias.value) // output projection bias travels with the other linear biases
            b.add(a + "o_proj.bias", TensorRole::Attention, d, 1, 1, false);
        if (cross) { // Mllama cross-attention: q/k norms and the tanh attention gate
            b.vec(a + "qk_norm", TensorRole::Norm, 2 * dk);
            b.vec("cross_attn_gates", TensorRole::Norm, 2);
        }
    }
    if (w.indexHeads > 0 && w.indexHeadDim > 0) {
        // DeepSeek sparse attention's lightning indexer (DeepSeek-V3.2 inference/model.py
        // Indexer): wq_b from the query latent, wk + LayerNorm, per-head weights_proj.
        const std::int64_t qr = m.qLoraRank.value > 0 ? m.qLoraRank.value : w.qLora;
        b.add("self_attn.indexer.wq_b", TensorRole::Mixer, w.indexHeads * w.indexHeadDim,
              qr > 0 ? qr : d);
        b.add("self_attn.indexer.wk", TensorRole::Mixer, w.indexHeadDim, d);
        b.add("self_attn.indexer.k_norm", TensorRole::Mixer, 2 * w.indexHeadDim, 1, 1, false);
        b.add("self_attn.indexer.weights_proj", TensorRole::Mixer, w.indexHeads, d);
    }
}

void addLayer(Builder& b, const ModelSpec& m, std::size_t i, std::int64_t kvHeads) {
    const WeightSpec& w = m.weights;
    const std::int64_t d = m.hidden.value;
    const Mixer mixer = i < w.mixer.size() ? w.mixer[i] : Mixer::Attention;
    const Ffn ffn = i < w.ffn.size() ? w.ffn[i] : Ffn::Dense;
    const std::int64_t normWidth = d * (m.mlpBias.value ? 2 : 1);
    switch (mixer) {
    case Mixer::Attention:
        addAttention(b, m, kvHeads, false);
        break;
    case Mixer::CrossAttention:
        addAttention(b, m, kvHeads, true);
        break;
    case Mixer::Mamba2: {
        // Mamba-2 (transformers modeling_nemotron_h.py NemotronHMamba2Mixer): in_proj emits
        // z, x, B, C and dt; a depthwise conv over x, B, C; dt_bias, A_log, D per head; a gated
        // RMSNorm over d_inner; out_proj.
        const std::int64_t di = w.mambaHeads * w.mambaHeadDim;
        const std::int64_t gs = 2 * w.mambaGroups * w.mambaState;
        b.add("mixer.in_proj", TensorRole::Mixer, 2 * di + gs + w.mambaHeads, d);
        b.add("mixer.conv1d", TensorRole::Mixer, di + gs, w.mambaConv + 1, 1, false);
        b.vec("mixer.dt_A_D", TensorRole::Mixer, 3 * w.mambaHeads);
        b.vec("mixer.norm", TensorRole::Mixer, di);
        b.add("mixer.out_proj", TensorRole::Mixer, d, di);
        break;
    }
    case Mixer::LinearAttention: {
        // Gated DeltaNet (transformers modeling_qwen3_next.py Qwen3NextGatedDeltaNet):
        // in_proj_qkvz, in_proj_ba, a depthwise conv over q, k, v, dt_bias and A_log per value
        // head, a gated RMSNorm of one head width, out_proj.
        const std::int64_t qk = w.laKeyHeads * w.laKeyDim, v = w.laValueHeads * w.laValueDim;
        b.add("linear_attn.in_proj_qkvz", TensorRole::Mixer, 2 * qk + 2 * v, d);
        b.add("linear_attn.in_proj_ba", TensorRole::Mixer, 2 * w.laValueHeads, d);
        b.add("linear_attn.conv1d", TensorRole::Mixer, 2 * qk + v, w.laConv, 1, false);
        b.vec("linear_attn.dt_A", TensorRole::Mixer, 2 * w.laValueHeads);
        b.vec("linear_attn.norm", TensorRole::Mixer, w.laValueDim);
        b.add("linear_attn.out_proj", TensorRole::Mixer, d, v);
        break;
    }
    case Mixer::None:
        break;
    }
    if (mixer != Mixer::None)
        b.vec("input_layernorm", TensorRole::Norm, normWidth);
    if (ffn != Ffn::None)
        b.vec("post_attention_layernorm", TensorRole::Norm, normWidth);
    switch (ffn) {
    case Ffn::Dense:
        addMlp(b, m, "mlp", TensorRole::DenseMlp,
               w.denseIntermediate > 0 ? w.denseIntermediate : m.intermediate.value, 1);
        break;
    case Ffn::Moe:
        addMlp(b, m, "mlp.experts", TensorRole::Expert, m.moeIntermediate.value,
               m.routedExperts.value);
        b.add("mlp.gate", TensorRole::Router, m.routedExperts.value, d, 1, false);
        if (w.sharedExpertWidth > 0) {
            addMlp(b, m, "mlp.shared_expert", TensorRole::SharedExpert, w.sharedExpertWidth, 1);
            if (w.sharedExpertSource.find("shared_expert_intermediate_size") != std::string::npos)
                b.add("mlp.shared_expert_gate", TensorRole::Router, 1, d, 1, false);
        }
        break;
    case Ffn::None:
        break;
    }
}

std::vector<WeightTensor> buildInventory(const ModelSpec& m, std::int64_t kvHeads) {
    std::vector<WeightTensor> out;
    const std::int64_t d = m.hidden.value;
    const std::int64_t vocab = m.vocab.value; // Gemma-3's absent vocab_size: ModelResolver
    Builder b{out, -1, {}};
    b.add("model.embed_tokens", TensorRole::Embedding, vocab + m.weights.extraEmbeddingRows, d, 1,
          false);
    if (!m.tiedEmbeddings.value || m.weights.untiedByFamily)
        b.add("lm_head", TensorRole::LmHead, vocab, d, 1, false);
    for (std::int64_t i = 0; i < m.layers.value; ++i) {
        b.layer = i;
        b.prefix = "model.layers." + std::to_string(i) + ".";
        addLayer(b, m, static_cast<std::size_t>(i), kvHeads);
    }
    b.layer = -1;
    b.prefix.clear();
    b.vec("model.norm", TensorRole::Norm, d * (m.mlpBias.value ? 2 : 1));
    return out;
}

} // namespace

struct WeightInventoryCache {
    std::mutex mutex;
    std::map<std::int64_t, std::shared_ptr<const std::vector<WeightTensor>>> byKvHeads;
    /// countParams per K/V layout, with the inputs it reads besides the inventory.
    struct Counted {
        std::shared_ptr<const std::vector<WeightTensor>> inventory;
        std::int64_t visionParams, mtpLayers, layers, hidden;
        ParamCount count;
    };
    std::map<std::int64_t, Counted> paramsByKvHeads;
};

std::shared_ptr<WeightInventoryCache> newWeightInventoryCache() {
    return std::make_shared<WeightInventoryCache>();
}

std::shared_ptr<const std::vector<WeightTensor>> weightInventory(const ModelSpec& m,
                                                                 std::int64_t kvHeads) {
    kvHeads = std::max<std::int64_t>(0, kvHeads); // 0: the model's own K/V layout
    if (!m.inventoryCache)
        return std::make_shared<const std::vector<WeightTensor>>(buildInventory(m, kvHeads));
    WeightInventoryCache& c = *m.inventoryCache;
    const std::lock_guard<std::mutex> lock(c.mutex);
    auto& slot = c.byKvHeads[kvHeads];
    if (!slot)
        slot = std::make_shared<const std::vector<WeightTensor>>(buildInventory(m, kvHeads));
    return slot;
}

std::int64_t kvProjParamsPerLayer(const ModelSpec& m, std::int64_t kvHeads) {
    const std::int64_t d = m.hidden.value;
    if (m.mla && kvHeads <= 0) {
        const std::int64_t r = m.kvLoraRank.value, rope = m.qkRopeHeadDim.value;
        return d * (r + rope) + r * m.qHeads.value * (m.qkNopeHeadDim.value + m.vHeadDim.value);
    }
    const std::int64_t hkv = kvHeads > 0 ? kvHeads : m.kvHeads.value;
    return d * hkv * (m.keyDim() + m.valueDim());
}

namespace {
ParamCount computeParams(const ModelSpec& m, std::int64_t kvHeads,
                         const std::vector<WeightTensor>& inventory) {
    ParamCount p;
    for (const WeightTensor& t : inventory) {
        const std::int64_t n = t.params();
        switch (t.role) {
        case TensorRole::Embedding:
            p.embedding += n;
            break;
        case TensorRole::LmHead:
            p.lmHead += n;
            break;
        case TensorRole::Attention:
            p.attention += n;
            break;
        case TensorRole::Mixer:
            p.mixer += n;
            break;
        case TensorRole::DenseMlp:
        case TensorRole::SharedExpert:
            p.mlp += n;
            break;
        case TensorRole::Expert:
            p.mlp += n;
            p.experts += n;
            break;
        case TensorRole::Router:
            p.router += n;
            break;
        case TensorRole::Norm:
            p.norms += n;
            break;
        case TensorRole::Vision:
            p.vision += n;
            break;
        }
    }
    p.vision += m.weights.visionParams;
    // MTP layers (DeepSeek-V3 eh_proj + enorm/hnorm + one decoder layer; Qwen3.5 likewise):
    // the shape of the last decoder layer, plus the 2d → d projection and three norms.
    if (m.weights.mtpLayers > 0 && m.layers.value > 0) {
        std::vector<WeightTensor> last;
        Builder b{last, -1, {}};
        addLayer(b, m, static_cast<std::size_t>(m.layers.value - 1), kvHeads);
        std::int64_t layer = 0;
        for (const auto& t : last)
            layer += t.params();
        const std::int64_t d = m.hidden.value;
        p.mtp = m.weights.mtpLayers * (layer + 2 * d * d + 3 * d);
    }
    return p;
}
} // namespace

ParamCount countParams(const ModelSpec& m, std::int64_t kvHeads) {
    // Every evaluate counts the parameters (the pool, the step, the PP stages), and a slider
    // drag evaluates hundreds of deployments of one model: the count is kept with the model's
    // inventory, keyed by the K/V layout and checked against what else it reads.
    const auto inventory = weightInventory(m, kvHeads);
    if (!m.inventoryCache)
        return computeParams(m, kvHeads, *inventory);
    WeightInventoryCache& c = *m.inventoryCache;
    {
        const std::lock_guard<std::mutex> lock(c.mutex);
        auto hit = c.paramsByKvHeads.find(kvHeads);
        if (hit != c.paramsByKvHeads.end() && hit->second.inventory == inventory &&
            hit->second.visionParams == m.weights.visionParams &&
            hit->second.mtpLayers == m.weights.mtpLayers && hit->second.layers == m.layers.value &&
            hit->second.hidden == m.hidden.value)
            return hit->second.count;
    }
    const ParamCount p = computeParams(m, kvHeads, *inventory);
    const std::lock_guard<std::mutex> lock(c.mutex);
    c.paramsByKvHeads[kvHeads] = {inventory,      m.weights.visionParams, m.weights.mtpLayers,
                                  m.layers.value, m.hidden.value,         p};
    return p;
}

WeightDtype resolveWeightDtype(const ModelSpec& m, WeightDtype d) {
    return loadedWeights(m, d, 1).dtype;
}

std::int64_t weightBytes(const ModelSpec& m, const ParamCount&, WeightDtype d) {
    return loadedWeights(m, d, 1).bytes;
}

} // namespace kvscope
