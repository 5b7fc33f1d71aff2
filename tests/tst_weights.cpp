// Weights as the engines load them and parameter totals of the 2026 families: every config in
// configs-2026 against its model card's published total, the engine logs' "Model loading took
// X GiB" (per rank at TP > 1), the quantization formats and hostile quantization configs.
#include "core/law/law.h"
#include "core/model/dtype.h"
#include "core/model/gpu.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/model/presets.h"
#include "core/model/quant.h"
#include "core/model/weights.h"

#include <QtTest/QtTest>
#include <cmath>
#include <filesystem>
#include <fstream>

using namespace kvscope;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string fixture(const QString& rel) {
    // rel: "configs-2026/x.json", "configs-logged/x.json" or "configs/x.json"
    return (QStringLiteral(KVSCOPE_FIXTURES_ROOT "/") + rel).toStdString();
}

ModelSpec load(const QString& rel) {
    auto m = loadModelSnapshot(fixture(rel));
    if (!m.ok())
        qFatal("%s: %s", qPrintable(rel), m.error().message().c_str());
    return m.value();
}

ModelSpec load(const char* rel) {
    return load(QString::fromLatin1(rel));
}

} // namespace

class TestWeights : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void publishedTotals_data();
    void publishedTotals();
    void modelLoadingTook_data();
    void modelLoadingTook();
    void layouts();
    void nvfp4Snapshot();
    void mxfp4ExpertsOnly();
    void tritonMxfp4Layout();
    void ropeCaches_data();
    void ropeCaches();
    void expertDtype();
    void ropeScalingFields();
    void hostileExpertDtype();
    void fp8BlockScales();
    void ignorePatterns();
    void indexTotalSize();
    void weightDtypeOverrides();
    void hostileQuantization_data();
    void hostileQuantization();
    void gpuPresets_data();
    void gpuPresets();
};

void TestWeights::publishedTotals_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<double>("published"); // the model card's total (language model + vision)
    QTest::addColumn<bool>("withVision");
    // Each figure: the model card (Hugging Face page) or the vendor's announcement.
    // huggingface.co/Qwen/Qwen2.5-VL-7B-Instruct: "8.29B params" (safetensors, LM + vision).
    QTest::newRow("qwen2.5-vl-7b 8.29B")
        << "configs-2026/Qwen__Qwen2.5-VL-7B-Instruct.json" << 8.29e9 << true;
    // huggingface.co/Qwen/Qwen3-30B-A3B: "Number of Parameters: 30.5B in total".
    QTest::newRow("qwen3-30b-a3b 30.5B")
        << "configs-2026/Qwen__Qwen3-30B-A3B.json" << 30.5e9 << false;
    // transformers docs model_doc/qwen3_5_moe: "Qwen/Qwen3.5-35B-A3B (35B total/3B active)";
    // the card counts the vision encoder in (Causal Language Model with Vision Encoder).
    QTest::newRow("qwen3.5-35b-a3b 35B")
        << "configs-2026/Qwen__Qwen3.5-35B-A3B.json" << 35e9 << true;
    // huggingface.co/deepseek-ai/DeepSeek-V3.2 follows V3: 671B main model (685B with MTP).
    QTest::newRow("deepseek-v3.2 671B")
        << "configs-2026/deepseek-ai__DeepSeek-V3.2.json" << 671e9 << false;
    // featherless.ai/models/deepseek-ai/DeepSeek-V4-Flash (model card text): "284 billion
    // total parameters (13 billion activated)".
    QTest::newRow("deepseek-v4-flash 284B")
        << "configs-2026/deepseek-ai__DeepSeek-V4-Flash.json" << 284e9 << false;
    // huggingface.co/google/gemma-3-27b-it: 27.4B params (safetensors), SigLIP included.
    QTest::newRow("gemma-3-27b 27.4B")
        << "configs-2026/google__gemma-3-27b-it.json" << 27.4e9 << true;
    // huggingface.co/meta-llama/Llama-3.2-11B-Vision-Instruct: "11B (10.6)" parameters.
    QTest::newRow("llama-3.2-11b-vision 10.6B")
        << "configs-2026/meta-llama__Llama-3.2-11B-Vision-Instruct.json" << 10.6e9 << true;
    // huggingface.co/meta-llama/Llama-4-Scout-17B-16E-Instruct: 17B active, "109B" total.
    QTest::newRow("llama-4-scout 109B")
        << "configs-2026/meta-llama__Llama-4-Scout-17B-16E-Instruct.json" << 109e9 << true;
    // huggingface.co/nvidia/Nemotron-H-56B-Base-8K and NeMo's NemotronHModelProvider56B: 56B.
    QTest::newRow("nemotron-h-56b 56B")
        << "configs-2026/nvidia__Nemotron-H-56B-Base-8K.json" << 56e9 << false;
    // huggingface.co/Qwen/Qwen3-235B-A22B: "235B in total and 22B activated".
    QTest::newRow("qwen3-235b-a22b-nvfp4 235B")
        << "configs-2026/nvidia__Qwen3-235B-A22B-NVFP4" << 235e9 << false;
    // openai.com/index/introducing-gpt-oss: gpt-oss-20b has 21B parameters (3.6B active).
    QTest::newRow("gpt-oss-20b 21B") << "configs-2026/openai__gpt-oss-20b.json" << 21e9 << false;
}

void TestWeights::publishedTotals() {
    QFETCH(QString, file);
    QFETCH(double, published);
    QFETCH(bool, withVision);
    const ModelSpec m = load(file);
    const ParamCount p = countParams(m);
    QCOMPARE(p.vision > 0, withVision);
    const double counted = static_cast<double>(p.total() + p.vision);
    QVERIFY2(std::fabs(counted - published) / published < 0.02,
             qPrintable(QStringLiteral("counted %1 (LM %2, vision %3) vs published %4")
                            .arg(counted)
                            .arg(double(p.total()))
                            .arg(double(p.vision))
                            .arg(published)));
}

void TestWeights::modelLoadingTook_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("tp");
    QTest::addColumn<double>("loggedGiB"); // "Model loading took X GiB" (per rank)
    QTest::addColumn<double>("tolerance");
    // engine-logs/vllm-0.19.0-h100/qwen-qwen2-5-7b-instruct--h100-80gb--tp{1,2,4}pp1dp1--8192.log
    QTest::newRow("qwen2.5-7b tp1") << "configs-logged/Qwen__Qwen2.5-7B-Instruct.json"
                                    << "auto" << 1 << 14.25 << 0.02;
    QTest::newRow("qwen2.5-7b tp2") << "configs-logged/Qwen__Qwen2.5-7B-Instruct.json"
                                    << "auto" << 2 << 7.12 << 0.02;
    QTest::newRow("qwen2.5-7b tp4") << "configs-logged/Qwen__Qwen2.5-7B-Instruct.json"
                                    << "auto" << 4 << 3.55 << 0.02;
    // fp8dyn-redhatai-qwen2-5---h100-80gb--tp1pp1dp1--8192.log (RedHatAI fp8-dynamic; its config
    // is not in the fixtures: the base model's config with --weight-dtype fp8).
    QTest::newRow("redhatai qwen2.5-7b fp8-dynamic")
        << "configs-logged/Qwen__Qwen2.5-7B-Instruct.json"
        << "fp8" << 1 << 8.14 << 0.02;
    // w8a8-redhatai-qwen2-5-7b--h100-80gb--tp1pp1dp1--8192.log (base config + int8).
    QTest::newRow("redhatai qwen2.5-7b w8a8") << "configs-logged/Qwen__Qwen2.5-7B-Instruct.json"
                                              << "int8" << 1 << 8.14 << 0.02;
    // w4a16-redhatai-lla--h100-80gb--tp1pp1dp1--8192-dtf16.log: Llama-3.1-8B w4a16; the
    // Llama-3-8B config stands in (same shapes) with --weight-dtype int4.
    QTest::newRow("redhatai llama-3.1-8b w4a16") << "configs/meta-llama__Meta-Llama-3-8B.json"
                                                 << "int4" << 1 << 5.38 << 0.02;
    // openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192.log, mxfp4 experts (Triton backend): the
    // swizzled values padded to 64-byte tiles, the scales twice, fp32 biases, the fp32 YaRN
    // cache (core/model/weights.cpp tritonMxfp4RankBytes).
    QTest::newRow("gpt-oss-20b mxfp4 tp2") << "configs-2026/openai__gpt-oss-20b.json"
                                           << "auto" << 2 << 7.01 << 0.02;
    // qwen-qwen3-30b-a3b--h100-80gb--tp1pp1dp1--8192.log
    QTest::newRow("qwen3-30b-a3b tp1") << "configs-2026/Qwen__Qwen3-30B-A3B.json"
                                       << "auto" << 1 << 56.88 << 0.02;
    // google-gemma-3-27b-it--h100-80gb--tp1pp1dp1--8192.log (vision tower loaded, and the
    // 8× linear-scaled global rotary cache beside the local one: 0.28 GiB). 0.5% here: the
    // figure without the rotary caches (51.10 GiB) sits 0.7% low.
    QTest::newRow("gemma-3-27b tp1") << "configs-2026/google__gemma-3-27b-it.json"
                                     << "auto" << 1 << 51.45 << 0.005;
    // meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192.log: 50.6 GiB of weights per rank
    // plus the 2.5 GiB rotary cache of 10,485,760 positions.
    QTest::newRow("llama-4-scout tp4")
        << "configs-2026/meta-llama__Llama-4-Scout-17B-16E-Instruct.json"
        << "auto" << 4 << 53.12 << 0.02;
    // google-gemma-2-2b-it--h100-80gb--tp1pp1dp1--8192.log
    QTest::newRow("gemma-2-2b tp1") << "configs-logged/google__gemma-2-2b-it.json"
                                    << "auto" << 1 << 4.9 << 0.02;
    // vllm-0.10.1.1-a100/vllm-7B-1gpuA10080GB-0.5GRAM.log and -2gpu…-same-node.log
    QTest::newRow("qwen2-7b tp1") << "configs-logged/Qwen__Qwen2-7B.json"
                                  << "auto" << 1 << 14.2488 << 0.02;
    QTest::newRow("qwen2-7b tp2") << "configs-logged/Qwen__Qwen2-7B.json"
                                  << "auto" << 2 << 7.1217 << 0.02;
}

void TestWeights::modelLoadingTook() {
    QFETCH(QString, file);
    QFETCH(QString, dtype);
    QFETCH(int, tp);
    QFETCH(double, loggedGiB);
    QFETCH(double, tolerance);
    const ModelSpec m = load(file);
    auto d = parseWeightDtype(dtype.toStdString());
    QVERIFY(d.ok());
    const LoadedWeights w = loadedWeights(m, d.value(), tp);
    const double gib = static_cast<double>(w.bytesPerRank) / kGiB;
    QVERIFY2(std::fabs(gib - loggedGiB) / loggedGiB < tolerance,
             qPrintable(QStringLiteral("%1 GiB per rank vs logged %2 (%3)")
                            .arg(gib)
                            .arg(loggedGiB)
                            .arg(QString::fromStdString(w.format))));
    // The law reports the same figure into the pool.
    Deployment dep;
    dep.tp = tp;
    dep.weightDtype = d.value();
    auto gpu = loadGpu("h100-sxm");
    QVERIFY(gpu.ok());
    if (m.qHeads.value % tp == 0) {
        auto r = evaluate(m, gpu.value(), dep);
        QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
        QCOMPARE(r.value().weightBytesPerRank, w.bytesPerRank);
    }
}

void TestWeights::layouts() {
    // Llama-4 Maverick interleaves dense and MoE layers: step 2 → 24 of 48 MoE.
    auto mav = parseModelConfig(
        R"({"model_type":"llama4","text_config":{"model_type":"llama4_text","hidden_size":5120,
        "num_hidden_layers":48,"num_attention_heads":40,"num_key_value_heads":8,"head_dim":128,
        "intermediate_size":8192,"intermediate_size_mlp":16384,"num_local_experts":128,
        "num_experts_per_tok":1,"interleave_moe_layer_step":2,"vocab_size":202048,
        "tie_word_embeddings":false}})",
        "maverick");
    QVERIFY(mav.ok());
    const auto& f = mav.value().weights.ffn;
    QCOMPARE(std::count(f.begin(), f.end(), Ffn::Moe), 24L);
    QCOMPARE(f[0], Ffn::Dense);
    QCOMPARE(f[1], Ffn::Moe);
    // huggingface.co/meta-llama/Llama-4-Maverick-17B-128E-Instruct: 400B total (LM ~398B).
    const double mp = static_cast<double>(countParams(mav.value()).total());
    QVERIFY2(std::fabs(mp - 400e9) / 400e9 < 0.02, qPrintable(QString::number(mp)));
    // Nemotron-H: M mamba, * attention, - MLP.
    const ModelSpec n = load("configs-2026/nvidia__Nemotron-H-56B-Base-8K.json");
    QCOMPARE(std::count(n.weights.mixer.begin(), n.weights.mixer.end(), Mixer::Mamba2), 54L);
    QCOMPARE(std::count(n.weights.mixer.begin(), n.weights.mixer.end(), Mixer::Attention), 10L);
    // Qwen3.5: 30 Gated DeltaNet layers, 10 full attention; one shared expert of 512.
    const ModelSpec q = load("configs-2026/Qwen__Qwen3.5-35B-A3B.json");
    QCOMPARE(std::count(q.weights.mixer.begin(), q.weights.mixer.end(), Mixer::LinearAttention),
             30L);
    QCOMPARE(q.weights.sharedExpertWidth, 512LL);
    QVERIFY(countParams(q).mtp > 0);
    // DeepSeek-V3.2: 3 dense layers, 58 MoE, the indexer counted, MTP apart.
    const ModelSpec ds = load("configs-2026/deepseek-ai__DeepSeek-V3.2.json");
    QCOMPARE(std::count(ds.weights.ffn.begin(), ds.weights.ffn.end(), Ffn::Moe), 58L);
    const ParamCount dp = countParams(ds);
    QVERIFY(dp.mixer > 0);
    QVERIFY(std::fabs(static_cast<double>(dp.total() + dp.mtp) - 685e9) / 685e9 < 0.02);
    // Mllama: 8 cross-attention layers.
    const ModelSpec ml = load("configs-2026/meta-llama__Llama-3.2-11B-Vision-Instruct.json");
    QCOMPARE(std::count(ml.weights.mixer.begin(), ml.weights.mixer.end(), Mixer::CrossAttention),
             8L);
}

void TestWeights::nvfp4Snapshot() {
    const ModelSpec m = load("configs-2026/nvidia__Qwen3-235B-A22B-NVFP4");
    QVERIFY(m.weights.quant.present);
    QCOMPARE(m.weights.quant.scheme.name, std::string("nvfp4"));
    QCOMPARE(m.weights.quant.scheme.groupSize, 16LL);
    QCOMPARE(m.weights.quant.kvCacheDtype, std::string("FP8"));
    const LoadedWeights w = loadedWeights(m, WeightDtype::Auto, 1);
    QVERIFY(w.dtype == WeightDtype::NVFP4);
    const ParamCount p = countParams(m);
    // Every linear but the excluded routers and lm_head: 4.5 bits per weight + 16-bit rest.
    QCOMPARE(w.quantizedParams, p.attention + p.mlp - 94 * 0 /* no qkv bias */);
    const double bitsPerQuantized =
        static_cast<double>(w.bytes - (p.embedding + p.lmHead + p.norms + p.router) * 2) * 8 /
        static_cast<double>(w.quantizedParams);
    QVERIFY2(std::fabs(bitsPerQuantized - 4.5) < 0.01,
             qPrintable(QString::number(bitsPerQuantized)));
    QVERIFY(QString::fromStdString(w.source).contains(QStringLiteral("hf_quant_config.json")));
}

void TestWeights::mxfp4ExpertsOnly() {
    const ModelSpec m = load("configs-2026/openai__gpt-oss-20b.json");
    const LoadedWeights w = loadedWeights(m, WeightDtype::Auto, 1);
    QVERIFY(w.dtype == WeightDtype::MXFP4);
    QCOMPARE(w.quantizedParams, countParams(m).experts);
    // Checkpoint: 13.76 GB on the Hub (12.8 GiB); experts at 4.25 bits, the rest bf16.
    QVERIFY2(std::fabs(static_cast<double>(w.bytes) / kGiB - 12.8) < 0.3,
             qPrintable(QString::number(static_cast<double>(w.bytes) / kGiB)));
    // Without the quantization config, 2 bytes per parameter would give ~39 GiB.
    QVERIFY(loadedWeights(m, WeightDtype::BF16, 1).bytes > 3 * w.bytes);
}

void TestWeights::tritonMxfp4Layout() {
    // gpt-oss-20b at TP 2, one layer's experts on one rank (32 experts, hidden 2880,
    // intermediate 2880 / 2 = 1440 → 1472 padded to 64):
    //   w13 values 32 × 2944 × round_up(1440, 64) = 32 × 2944 × 1472 = 138,674,176
    //   w2 values  32 × 2880 × round_up(736, 64)  = 32 × 2880 × 768  =  70,778,880
    //   loaded scales 32 × (2944 × 90 + 2880 × 46)                   =  12,718,080
    //   swizzled scales 32 × (3072 × 90 + 3072 × 46)                 =  13,369,344
    //   fp32 biases 32 × (2944 + 2880) × 4                          =     745,472
    const std::int64_t perLayer = 138'674'176LL + 70'778'880 + 12'718'080 + 13'369'344 + 745'472;
    const ModelSpec m = load("configs-2026/openai__gpt-oss-20b.json");
    const LoadedWeights w = loadedWeights(m, WeightDtype::Auto, 2);
    // The rest of the rank is what a bf16 load holds apart from its experts (2 bytes per
    // parameter, split over the 2 ranks): embeddings, lm_head, attention, routers, norms and
    // the fp32 YaRN cache.
    const LoadedWeights bf16 = loadedWeights(m, WeightDtype::BF16, 2);
    std::int64_t bf16ExpertsRank = 0;
    for (const WeightTensor& t : *weightInventory(m))
        if (t.role == TensorRole::Expert)
            bf16ExpertsRank += t.params() * 2 / 2;
    QCOMPARE(w.bytesPerRank - (bf16.bytesPerRank - bf16ExpertsRank), 24 * perLayer);
}

void TestWeights::ropeCaches_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<qint64>("bytes"); // per rank, served dtype
    // Gemma-3: global rope linear × 8 over 131,072 positions (transformers default) and the
    // sliding layers' own rope (rope_local_base_freq): (1,048,576 + 131,072) × 128 × 2.
    QTest::newRow("gemma-3-27b two caches")
        << "configs-2026/google__gemma-3-27b-it.json" << qint64((1'048'576LL + 131'072) * 128 * 2);
    // gpt-oss: YaRN original 4,096 × factor 32 = 131,072 positions × 64, float32 (gpt_oss.py).
    QTest::newRow("gpt-oss-20b yarn fp32")
        << "configs-2026/openai__gpt-oss-20b.json" << qint64(131'072LL * 64 * 4);
    // DeepSeek-V3.2: DeepSeek-YaRN original 4,096 × 40 = 163,840 × qk_rope_head_dim 64 × 2.
    QTest::newRow("deepseek-v3.2 yarn")
        << "configs-2026/deepseek-ai__DeepSeek-V3.2.json" << qint64(163'840LL * 64 * 2);
    // DeepSeek-V4-Flash: YaRN 65,536 × 16 = 1,048,576 positions × qk_rope_head_dim 64 (not the
    // 512-wide head) × 2.
    QTest::newRow("deepseek-v4-flash rope part")
        << "configs-2026/deepseek-ai__DeepSeek-V4-Flash.json" << qint64(1'048'576LL * 64 * 2);
    // Llama-4 Scout: llama3 rope keeps max_position_embeddings 10,485,760 × 128 × 2.
    QTest::newRow("llama-4-scout llama3")
        << "configs-2026/meta-llama__Llama-4-Scout-17B-16E-Instruct.json"
        << qint64(10'485'760LL * 128 * 2);
}

void TestWeights::ropeCaches() {
    QFETCH(QString, file);
    QFETCH(qint64, bytes);
    const ModelSpec m = load(file);
    const LoadedWeights w = loadedWeights(m, WeightDtype::Auto, 2);
    QCOMPARE(w.ropeCacheBytesPerRank, bytes);
    QVERIFY(QString::fromStdString(w.source).contains(QStringLiteral("rotary")));
}

void TestWeights::ropeScalingFields() {
    const auto parse = [](const char* rope) {
        return parseModelConfig(std::string(R"({"model_type":"llama","hidden_size":256,
            "num_hidden_layers":2,"num_attention_heads":4,"vocab_size":1000,
            "max_position_embeddings":4096,"rope_scaling":)") +
                                    rope + "}",
                                "rope");
    };
    // Linear × 4: 16,384 positions × head 64 × 2 B (LinearScalingRotaryEmbedding).
    auto lin = parse(R"({"rope_type":"linear","factor":4})");
    QVERIFY2(lin.ok(), lin.ok() ? "" : lin.error().message().c_str());
    QCOMPARE(loadedWeights(lin.value(), WeightDtype::Auto, 1).ropeCacheBytesPerRank,
             16'384LL * 64 * 2);
    // A rope type vLLM names but kvscope does not know: sized unscaled, and said so.
    auto odd = parse(R"({"rope_type":"mystery","factor":4})");
    QVERIFY(odd.ok());
    const LoadedWeights w = loadedWeights(odd.value(), WeightDtype::Auto, 1);
    QCOMPARE(w.ropeCacheBytesPerRank, 4'096LL * 64 * 2);
    QVERIFY(QString::fromStdString(w.source).contains(QStringLiteral("not known to kvscope")));
    // A bad factor is refused with the field named.
    auto bad = parse(R"({"rope_type":"linear","factor":-2})");
    QVERIFY(!bad.ok());
    QCOMPARE(QString::fromStdString(bad.error().field), QStringLiteral("rope_scaling.factor"));
}

void TestWeights::expertDtype() {
    // DeepSeek-V4-Flash: fp8 128 × 128 block linears, expert_dtype "fp4" → mxfp4 experts (vLLM
    // deepseek_v4.py): 4 bits + one e8m0 byte per 32 = 4.25 bits per expert parameter.
    const ModelSpec m = load("configs-2026/deepseek-ai__DeepSeek-V4-Flash.json");
    QCOMPARE(QString::fromStdString(m.weights.quant.expertScheme.name), QStringLiteral("mxfp4"));
    const LoadedWeights w = loadedWeights(m, WeightDtype::Auto, 1);
    const ParamCount p = countParams(m);
    const double expertBits =
        8.0 * static_cast<double>(w.expertBytes) / static_cast<double>(p.experts);
    QVERIFY2(std::fabs(expertBits - 4.25) < 0.01, qPrintable(QString::number(expertBits)));
    // The other linears stay fp8 (8 bits + a fp32 scale per 128 × 128 block).
    const double otherBits = 8.0 * static_cast<double>(w.attentionMlpBytes - w.expertBytes) /
                             static_cast<double>(p.attention + p.mlp - p.experts);
    QVERIFY2(otherBits > 8.0 && otherBits < 8.01, qPrintable(QString::number(otherBits)));
    QVERIFY(QString::fromStdString(w.source).contains(QStringLiteral("expert_dtype")));
    QVERIFY(QString::fromStdString(w.format).contains(QStringLiteral("experts mxfp4")));
    // Its silu experts do not run on the Triton backend (swigluoai only): no Triton padding,
    // and the source says which layout the per-rank figure assumes.
    QVERIFY(QString::fromStdString(w.source).contains(QStringLiteral("Marlin or FlashInfer")));
    // Every layer is MoE: the absent intermediate_size is not used, so no warning about it.
    for (const std::string& warning : m.warnings)
        QVERIFY2(warning.find("intermediate_size") == std::string::npos, warning.c_str());
    // ~284B parameters: experts ~270B at 4.25 bits plus fp8 and bf16 rest, ~150 GiB, not the
    // ~265 GiB an all-fp8 count gives.
    QVERIFY2(static_cast<double>(w.bytes) / kGiB < 170,
             qPrintable(QString::number(static_cast<double>(w.bytes) / kGiB)));
}

void TestWeights::hostileExpertDtype() {
    for (const char* v : {R"("fp3")", "4", "null"}) {
        const std::string cfg = R"({"model_type":"deepseek_v4","hidden_size":256,
            "num_hidden_layers":2,"num_attention_heads":4,"vocab_size":1000,"expert_dtype":)" +
                                std::string(v) +
                                R"(,"quantization_config":{"quant_method":"fp8"}})";
        auto m = parseModelConfig(cfg, "hostile");
        if (std::string(v) == "null") { // absent: the experts follow the fp8 scheme
            QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
            QVERIFY(m.value().weights.quant.expertScheme.name.empty());
            continue;
        }
        QVERIFY(!m.ok());
        QCOMPARE(QString::fromStdString(m.error().field), QStringLiteral("expert_dtype"));
        QVERIFY(m.error().message().find('\n') == std::string::npos);
    }
}

void TestWeights::fp8BlockScales() {
    const ModelSpec m = load("configs-2026/deepseek-ai__DeepSeek-V3.2.json");
    const QuantScheme& s = m.weights.quant.scheme;
    QCOMPARE(s.blockRows, 128LL);
    QCOMPARE(s.blockCols, 128LL);
    // One fp32 scale per 128 × 128 block: 7168 × 2048 → 56 × 16 scales.
    QCOMPARE(quantizedTensorBytes(s, 2048, 7168), 2048LL * 7168 + 16 * 56 * 4);
    // Per-channel int8: one fp32 scale per row; w4a16 group 128: 4 bits + fp16 per 128.
    QCOMPARE(quantizedTensorBytes(overrideScheme("int8"), 4096, 4096), 4096LL * 4096 + 4096 * 4);
    QCOMPARE(quantizedTensorBytes(overrideScheme("int4"), 4096, 4096),
             4096LL * 4096 / 2 + 4096 * 32 * 2);
    QCOMPARE(quantizedTensorBytes(overrideScheme("nvfp4"), 16, 32), 16LL * 16 + 32 + 8);
}

void TestWeights::ignorePatterns() {
    QuantSpec q;
    q.present = true;
    q.ignore = {"lm_head", "model.layers.*.self_attn", "re:.*vision_tower.*", "mlp.gate"};
    QVERIFY(quantIgnores(q, "lm_head"));
    QVERIFY(quantIgnores(q, "model.layers.3.self_attn.q_proj"));
    QVERIFY(quantIgnores(q, "vision_tower.blocks.0.qkv"));
    QVERIFY(quantIgnores(q, "model.layers.7.mlp.gate"));
    QVERIFY(!quantIgnores(q, "model.layers.7.mlp.gate_proj"));
    QVERIFY(!quantIgnores(q, "model.layers.3.mlp.experts.down_proj"));
}

void TestWeights::indexTotalSize() {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "kvscope-tst-weights-snapshot";
    fs::create_directories(dir);
    fs::copy_file(fixture(QStringLiteral("configs-logged/Qwen__Qwen2.5-7B-Instruct.json")),
                  dir / "config.json", fs::copy_options::overwrite_existing);
    // huggingface.co/Qwen/Qwen2.5-7B-Instruct model.safetensors.index.json
    std::ofstream(dir / "model.safetensors.index.json")
        << R"({"metadata":{"total_size":15231233024},"weight_map":{}})";
    auto m = loadModelSnapshot(dir.string());
    QVERIFY(m.ok());
    const LoadedWeights w = loadedWeights(m.value(), WeightDtype::Auto, 1);
    QCOMPARE(w.bytes, 15231233024LL);
    QVERIFY(QString::fromStdString(w.source).contains(QStringLiteral("total_size")));
    std::ofstream(dir / "model.safetensors.index.json") << R"({"metadata":{"total_size":"x"}})";
    auto bad = loadModelSnapshot(dir.string());
    QVERIFY(!bad.ok());
    QCOMPARE(bad.error().field, std::string("model.safetensors.index.json.metadata.total_size"));
    fs::remove_all(dir);
}

void TestWeights::weightDtypeOverrides() {
    for (const char* t : {"fp16", "fp32", "int8", "int4", "mxfp4", "nvfp4", "bf16", "fp8"}) {
        auto d = parseWeightDtype(t);
        QVERIFY2(d.ok(), t);
        QCOMPARE(toString(d.value()), std::string(t));
    }
    const ModelSpec m = load("configs-logged/Qwen__Qwen2.5-7B-Instruct.json");
    const auto p = countParams(m).total();
    QCOMPARE(loadedWeights(m, WeightDtype::FP32, 1).bytes, 4 * p);
    QCOMPARE(loadedWeights(m, WeightDtype::FP16, 1).bytes, 2 * p);
    QVERIFY(loadedWeights(m, WeightDtype::INT4, 1).bytes <
            loadedWeights(m, WeightDtype::INT8, 1).bytes);
    QVERIFY(!parseWeightDtype("int3").ok());
}

void TestWeights::hostileQuantization_data() {
    QTest::addColumn<QString>("quant");
    QTest::addColumn<QString>("field");
    QTest::newRow("not an object") << R"("fp8")"
                                   << "quantization_config";
    QTest::newRow("unknown method") << R"({"quant_method":"magic"})"
                                    << "quantization_config.quant_method";
    QTest::newRow("method a number") << R"({"quant_method":8})"
                                     << "quantization_config.quant_method";
    QTest::newRow("block size one int") << R"({"quant_method":"fp8","weight_block_size":[128]})"
                                        << "quantization_config.weight_block_size";
    QTest::newRow("block size negative") << R"({"quant_method":"fp8","weight_block_size":[-1,128]})"
                                         << "quantization_config.weight_block_size";
    QTest::newRow("ignore not a list") << R"({"quant_method":"mxfp4","modules_to_not_convert":"x"})"
                                       << "quantization_config.modules_to_not_convert";
    QTest::newRow("ignore entry a number")
        << R"({"quant_method":"fp8","ignored_layers":["lm_head",3]})"
        << "quantization_config.ignored_layers[1]";
    QTest::newRow("bad regex") << R"({"quant_method":"compressed-tensors","ignore":["re:(("],
        "config_groups":{"g":{"weights":{"num_bits":8,"type":"int","strategy":"channel"}}}})"
                               << "quantization_config.ignore[0]";
    QTest::newRow("gptq bits 5") << R"({"quant_method":"gptq","bits":5,"group_size":128})"
                                 << "quantization_config.bits";
    QTest::newRow("gptq group 0") << R"({"quant_method":"gptq","bits":4,"group_size":0})"
                                  << "quantization_config.group_size";
    QTest::newRow("ct no groups") << R"({"quant_method":"compressed-tensors"})"
                                  << "quantization_config.config_groups";
    QTest::newRow("ct bits 3") << R"({"quant_method":"compressed-tensors","config_groups":
        {"g":{"weights":{"num_bits":3,"type":"int","strategy":"group","group_size":128}}}})"
                               << "quantization_config.config_groups.g.weights.num_bits";
    QTest::newRow("ct group without size")
        << R"({"quant_method":"compressed-tensors",
        "config_groups":{"g":{"weights":{"num_bits":4,"type":"int","strategy":"group"}}}})"
        << "quantization_config.config_groups.g.weights.group_size";
    QTest::newRow("ct strategy unknown") << R"({"quant_method":"compressed-tensors",
        "config_groups":{"g":{"weights":{"num_bits":8,"type":"int","strategy":"diagonal"}}}})"
                                         << "quantization_config.config_groups.g.weights.strategy";
    QTest::newRow("bnb neither") << R"({"quant_method":"bitsandbytes"})"
                                 << "quantization_config.load_in_4bit";
    QTest::newRow("bnb type") << R"({"quant_method":"bitsandbytes","load_in_4bit":true,
        "bnb_4bit_quant_type":"int2"})"
                              << "quantization_config.bnb_4bit_quant_type";
    QTest::newRow("modelopt algo") << R"({"quant_method":"modelopt","quant_algo":"INT3"})"
                                   << "quantization_config.quant_algo";
    QTest::newRow("huge group") << R"({"quant_method":"awq","w_bit":4,"q_group_size":1e30})"
                                << "quantization_config.q_group_size";
}

void TestWeights::hostileQuantization() {
    QFETCH(QString, quant);
    QFETCH(QString, field);
    const std::string cfg = R"({"model_type":"llama","hidden_size":256,"num_hidden_layers":2,
        "num_attention_heads":4,"vocab_size":1000,"quantization_config":)" +
                            quant.toStdString() + "}";
    auto m = parseModelConfig(cfg, "hostile");
    QVERIFY(!m.ok());
    QCOMPARE(QString::fromStdString(m.error().field), field);
    QVERIFY(m.error().message().find('\n') == std::string::npos);
}

void TestWeights::gpuPresets_data() {
    QTest::addColumn<QString>("id");
    QTest::addColumn<double>("memoryGB");  // datasheet
    QTest::addColumn<double>("driverGiB"); // what the driver reports, 0 = not known
    QTest::newRow("rtx-3090") << "rtx-3090" << 24.0 << 23.58;
    QTest::newRow("rtx-pro-6000") << "rtx-pro-6000" << 96.0 << 95.01;
    QTest::newRow("l40s") << "l40s" << 48.0 << 44.42;
    QTest::newRow("a100-80gb") << "a100-80gb" << 80.0 << 79.25;
    QTest::newRow("a100-40gb") << "a100-40gb" << 40.0 << 0.0;
    QTest::newRow("a10g") << "a10g" << 24.0 << 0.0;
    QTest::newRow("l4") << "l4" << 24.0 << 0.0;
    QTest::newRow("l40") << "l40" << 48.0 << 0.0;
    QTest::newRow("rtx-2000-ada") << "rtx-2000-ada" << 16.0 << 0.0;
    QTest::newRow("h20") << "h20" << 96.0 << 0.0;
    QTest::newRow("h800") << "h800" << 80.0 << 0.0;
    QTest::newRow("gb200") << "gb200" << 186.0 << 0.0;
    QTest::newRow("b300") << "b300" << 288.0 << 0.0;
    QTest::newRow("mi325x") << "mi325x" << 256.0 << 0.0;
    QTest::newRow("mi355x") << "mi355x" << 288.0 << 0.0;
}

void TestWeights::gpuPresets() {
    QFETCH(QString, id);
    QFETCH(double, memoryGB);
    QFETCH(double, driverGiB);
    auto g = loadGpu(id.toStdString());
    QVERIFY2(g.ok(), qPrintable(id));
    QCOMPARE(g.value().memoryBytes, static_cast<std::int64_t>(memoryGB * 1e9));
    if (driverGiB > 0)
        QVERIFY(std::fabs(static_cast<double>(g.value().driverMemoryBytes) / kGiB - driverGiB) <
                0.005);
    else
        QCOMPARE(g.value().driverMemoryBytes, 0LL);
    QVERIFY(validateGpu(g.value()).ok());
    // Every preset names the datasheet it was copied from.
    const std::string text = embeddedResource("gpus/" + id.toStdString() + ".json");
    QVERIFY(text.find("datasheet") != std::string::npos);
}

QTEST_GUILESS_MAIN(TestWeights)
#include "tst_weights.moc"
