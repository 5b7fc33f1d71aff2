// Parameter counting from config shapes. Conventions (each checked against published totals in
// tests/tst_params.cpp): linear layers d_in × d_out (+ d_out bias where the architecture has
// biases); norms d per norm (2 per layer + 1 final; LayerNorm-with-bias models count 2·d);
// MoE layers hold routed + shared experts (3 matrices each) and a d × E router; MTP layers are
// not part of the served model.
#include "core/params.h"

namespace kvscope {

namespace {

std::int64_t mlpParams(const ModelSpec& m, std::int64_t width) {
    const std::int64_t d = m.hidden.value;
    const std::int64_t mats = m.gatedMlp.value ? 3 : 2;
    std::int64_t p = mats * d * width;
    if (m.mlpBias.value)
        p += (m.gatedMlp.value ? 2 * width : width) + d;
    return p;
}

bool layerIsMoe(const ModelSpec& m, std::int64_t layer) {
    if (m.routedExperts.value <= 0)
        return false;
    if (layer < m.firstDenseLayers.value)
        return false;
    const std::int64_t freq = m.moeLayerFreq.value > 0 ? m.moeLayerFreq.value : 1;
    // DeepSeek: layers past first_k_dense_replace with layer % freq == 0; Qwen-MoE:
    // (layer + 1) % decoder_sparse_step == 0. For freq 1 both are "every layer".
    return freq == 1 || (layer + 1) % freq == 0;
}

} // namespace

std::int64_t kvProjParamsPerLayer(const ModelSpec& m, std::int64_t kvHeads) {
    const std::int64_t d = m.hidden.value;
    if (m.mla && kvHeads <= 0) {
        const std::int64_t r = m.kvLoraRank.value, rope = m.qkRopeHeadDim.value;
        return d * (r + rope) + r * m.qHeads.value * (m.qkNopeHeadDim.value + m.vHeadDim.value);
    }
    const std::int64_t hkv = kvHeads > 0 ? kvHeads : m.kvHeads.value;
    return d * hkv * (m.keyDim() + m.valueDim());
}

ParamCount countParams(const ModelSpec& m, std::int64_t kvHeads) {
    ParamCount p;
    const std::int64_t d = m.hidden.value, L = m.layers.value, h = m.qHeads.value;
    p.embedding = m.vocab.value * d;
    p.lmHead = m.tiedEmbeddings.value ? 0 : m.vocab.value * d;

    std::int64_t attnPerLayer = 0, kvPerLayer = 0;
    if (m.mla && kvHeads <= 0) {
        const std::int64_t qk = m.qkNopeHeadDim.value + m.qkRopeHeadDim.value;
        const std::int64_t qLora = m.qLoraRank.value;
        const std::int64_t q = qLora > 0 ? d * qLora + qLora + qLora * h * qk : d * h * qk;
        kvPerLayer = kvProjParamsPerLayer(m, 0);
        attnPerLayer =
            q + kvPerLayer + m.kvLoraRank.value /* kv_a_layernorm */ + h * m.vHeadDim.value * d;
    } else {
        const std::int64_t hkv = kvHeads > 0 ? kvHeads : m.kvHeads.value;
        const std::int64_t dk = m.keyDim(), dv = m.valueDim();
        kvPerLayer = d * hkv * (dk + dv);
        attnPerLayer = d * h * dk + kvPerLayer + h * dv * d;
        if (m.qkvBias.value)
            attnPerLayer += h * dk + hkv * (dk + dv);
        if (m.mlpBias.value) // output projection bias travels with the other linear biases
            attnPerLayer += d;
    }
    p.attention = attnPerLayer * L;
    p.kvProjection = kvPerLayer * L;

    for (std::int64_t layer = 0; layer < L; ++layer) {
        if (layerIsMoe(m, layer)) {
            const std::int64_t experts = m.routedExperts.value + m.sharedExperts.value;
            p.mlp += experts * mlpParams(m, m.moeIntermediate.value);
            p.router += d * m.routedExperts.value;
        } else {
            p.mlp += mlpParams(m, m.intermediate.value);
        }
    }
    const bool layerNormBias = m.mlpBias.value; // GPT-style LayerNorm carries a bias vector
    p.norms = (2 * L + 1) * d * (layerNormBias ? 2 : 1);
    return p;
}

WeightDtype resolveWeightDtype(const ModelSpec& m, WeightDtype d) {
    if (d != WeightDtype::Auto)
        return d;
    return m.fp8Weights ? WeightDtype::FP8 : WeightDtype::BF16;
}

std::int64_t weightBytes(const ModelSpec& m, const ParamCount& p, WeightDtype d) {
    constexpr std::int64_t sixteen = 2; // bf16/fp16; float32 checkpoints are served in 16-bit
    if (resolveWeightDtype(m, d) == WeightDtype::FP8)
        return (p.total() - p.sixteenBitAlways()) * 1 + p.sixteenBitAlways() * sixteen;
    return p.total() * sixteen;
}

} // namespace kvscope
