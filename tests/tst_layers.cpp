// Layer groups: every real 2026 config resolves into per-kind groups whose counts and bytes are
// computed by hand from the config below; vLLM's hybrid allocator pages them; hostile inputs
// (unknown kinds, wrong lengths, NaN/Infinity, invalid UTF-8) give one valid-UTF-8 error line.
#include "core/format.h"
#include "core/jsonutil.h"
#include "core/law/law.h"
#include "core/model/gpu.h"
#include "core/model/layers.h"
#include "core/model/model.h"
#include "core/model/presets.h"
#include "testutils.h"

#include <QtTest/QtTest>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

using namespace kvscope;

namespace {

std::string fixture2026(const QString& file) {
    return (QStringLiteral(KVSCOPE_FIXTURES_2026_DIR "/") + file).toStdString();
}

std::string fixtureOld(const QString& file) {
    return (QStringLiteral(KVSCOPE_FIXTURES_DIR "/") + file).toStdString();
}

Result<ModelSpec> load(const QString& file) {
    return file.startsWith(QStringLiteral("old:")) ? loadModelConfigFile(fixtureOld(file.mid(4)))
                                                   : loadModelConfigFile(fixture2026(file));
}

/// "sliding:52:1024 full:10": kind, layer count and window of each group, in order.
QString summary(const ModelSpec& m) {
    QStringList parts;
    for (const auto& g : m.layerGroups) {
        QString s = QString::fromStdString(toString(g.kind)) + QLatin1Char(':') +
                    QString::number(g.count());
        if (g.window)
            s += QLatin1Char(':') + QString::number(*g.window);
        parts << s;
    }
    return parts.join(QLatin1Char(' '));
}

const char* kTiny = R"({"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
    "hidden_size": 512, "vocab_size": 1000, %1})";

QByteArray tiny(const char* extra) {
    return QString::fromLatin1(kTiny).arg(QString::fromUtf8(extra)).toUtf8();
}

} // namespace

class TestLayers : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void configs_data();
    void configs();
    void vllmPaging_data();
    void vllmPaging();
    void crossPagesFixed();
    void deepseekV4Specs_data();
    void deepseekV4Specs();
    void deepseekV4Paging();
    void deepseekV4OutsideVllmLayout();
    void perRankState();
    void reportsListGroups();
    void pythonLiterals();
    void hostile_data();
    void hostile();
    void hostileBytesOneUtf8Line();
    void sanitize();
};

void TestLayers::configs_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("groups");
    QTest::addColumn<qint64>("cellBytesPerToken");    // TP = 1, served dtype, Σ per-token layers
    QTest::addColumn<qint64>("stateBytesPerRequest"); // TP = 1, fixed state, all layers
    QTest::addColumn<qint64>("mtp");
    // text_config: 62 layers, sliding_window 1024, no sliding_window_pattern → transformers'
    // default 6: layers 5, 11, ..., 59 global (10), the other 52 sliding. 16 KV heads × (128 +
    // 128) × 2 B = 8,192 B per layer; × 62 = 507,904.
    QTest::newRow("gemma-3-27b-it") << "google__gemma-3-27b-it.json"
                                    << "sliding:52:1024 full:10" << 507'904LL << 0LL << 0LL;
    // layer_types alternates sliding_attention (window 128) / full_attention over 24 layers;
    // 8 × (64 + 64) × 2 = 2,048 B per layer; × 24 = 49,152.
    QTest::newRow("gpt-oss-20b") << "openai__gpt-oss-20b.json"
                                 << "sliding:12:128 full:12" << 49'152LL << 0LL << 0LL;
    // hybrid_override_pattern: 54 'M', 54 '-', 10 '*' over 118 layers. Attention: 8 × 256 × 2
    // = 4,096 B per layer × 10 = 40,960. Mamba-2 state per layer: conv 3 × (256·64 + 2·8·256)
    // = 61,440 bf16 = 122,880 B; SSM 256 × 64 × 256 = 4,194,304 bf16 = 8,388,608 B; together
    // 8,511,488 × 54 = 459,620,352.
    QTest::newRow("nemotron-h-56b")
        << "nvidia__Nemotron-H-56B-Base-8K.json"
        << "mamba:54 none:54 full:10" << 40'960LL << 459'620'352LL << 0LL;
    // layer_types: 30 linear_attention, 10 full_attention. Full: 2 × (256 + 256) × 2 = 2,048
    // × 10 = 20,480. Gated DeltaNet per layer: conv 3 × (2·16·128 + 32·128) = 24,576 bf16 =
    // 49,152 B; recurrent 32 × 128 × 128 = 524,288 × 4 B (mamba_ssm_dtype float32) =
    // 2,097,152 B; 2,146,304 × 30 = 64,389,120. mtp_num_hidden_layers 1.
    QTest::newRow("qwen3.5-35b-a3b") << "Qwen__Qwen3.5-35B-A3B.json"
                                     << "linear:30 full:10" << 20'480LL << 64'389'120LL << 1LL;
    // attention_chunk_size 8192, no_rope_layers [] → nope_layer_interval 4: layers 3, 7, ...,
    // 47 NoPE/global (12), 36 chunked. 8 × 256 × 2 = 4,096 × 48 = 196,608.
    QTest::newRow("llama-4-scout") << "meta-llama__Llama-4-Scout-17B-16E-Instruct.json"
                                   << "chunked:36:8192 full:12" << 196'608LL << 0LL << 0LL;
    // cross_attention_layers: 8 of 40. Self-attention 32 × 8 × 256 × 2 = 131,072 per token.
    // Cross: 4 tiles × ((560 / 14)^2 + 1) = 6,404 encoder tokens × 4,096 B × 8 = 209,846,272.
    QTest::newRow("llama-3.2-11b-vision") << "meta-llama__Llama-3.2-11B-Vision-Instruct.json"
                                          << "full:32 cross:8" << 131'072LL << 209'846'272LL << 0LL;
    // MLA latent (512 + 64) × 2 = 1,152 + indexer 128 fp8 + 4 B scale = 132 → 1,284 × 61 =
    // 78,324. num_nextn_predict_layers 1.
    QTest::newRow("deepseek-v3.2") << "deepseek-ai__DeepSeek-V3.2.json"
                                   << "mla:61" << 78'324LL << 0LL << 1LL;
    // compress_ratios over 43 layers: 0, 0, then 4 / 128 alternating. Entry 1 × 512 × 2 =
    // 1,024 B. Sliding: 2 × 1,024; ratio 4: 1,024 / 4 + indexer 132 / 4 = 289 × 21; ratio 128:
    // 1,024 / 128 = 8 × 20. 2,048 + 6,069 + 160 = 8,277.
    QTest::newRow("deepseek-v4-flash")
        << "deepseek-ai__DeepSeek-V4-Flash.json"
        << "sliding:2:128 compressed:21:4 compressed:20:128" << 8'277LL << 0LL << 1LL;
    // 48 full layers, 4 × 256 × 2 = 2,048 × 48 = 98,304.
    QTest::newRow("qwen3-30b-a3b") << "Qwen__Qwen3-30B-A3B.json"
                                   << "full:48" << 98'304LL << 0LL << 0LL;
    // use_sliding_window false: 28 full, 4 × 256 × 2 = 2,048 × 28 = 57,344.
    QTest::newRow("qwen2.5-vl-7b") << "Qwen__Qwen2.5-VL-7B-Instruct.json"
                                   << "full:28" << 57'344LL << 0LL << 0LL;
    // ModelOpt folder (config.json): 94 full, 4 × 256 × 2 = 2,048 × 94 = 192,512.
    QTest::newRow("qwen3-235b-a22b-nvfp4") << "nvidia__Qwen3-235B-A22B-NVFP4"
                                           << "full:94" << 192'512LL << 0LL << 0LL;
    // Gemma-2 alternates, sliding first: 21 sliding (4096) + 21 full; 8 × 512 × 2 = 8,192 × 42.
    QTest::newRow("gemma-2-9b") << "old:google__gemma-2-9b.json"
                                << "sliding:21:4096 full:21" << 344'064LL << 0LL << 0LL;
}

void TestLayers::configs() {
    QFETCH(QString, file);
    QFETCH(QString, groups);
    QFETCH(qint64, cellBytesPerToken);
    QFETCH(qint64, stateBytesPerRequest);
    QFETCH(qint64, mtp);
    auto m = load(file);
    QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
    QCOMPARE(summary(m.value()), groups);
    std::int64_t layers = 0, cell = 0, state = 0;
    std::vector<bool> seen(static_cast<std::size_t>(m->layers.value), false);
    for (const auto& g : m->layerGroups) {
        layers += g.count();
        if (storesPerTokenKv(g.kind))
            cell += g.count() * g.bytesPerTokenPerLayer;
        state += g.count() * g.stateBytesPerRequestPerLayer;
        QVERIFY(!g.source.empty());
        for (auto i : g.layers) {
            QVERIFY(i >= 0 && i < m->layers.value);
            QVERIFY(!seen[static_cast<std::size_t>(i)]);
            seen[static_cast<std::size_t>(i)] = true;
        }
    }
    QCOMPARE(layers, m->layers.value);
    QCOMPARE(cell, cellBytesPerToken);
    QCOMPARE(state, stateBytesPerRequest);
    QCOMPARE(m->mtpLayers.value, mtp);
    // The law's cell is the same sum (TP = 1, served dtype).
    Deployment d;
    d.poolGiB = 40;
    auto r = evaluate(m.value(), loadGpu("h200").value(), d);
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->cellBytesPerToken, cellBytesPerToken);
    QCOMPARE(r->fixedStateBytesPerRequestPerRank, stateBytesPerRequest);
}

void TestLayers::vllmPaging_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<int>("tp");
    QTest::addColumn<qint64>("pageBytes");
    QTest::addColumn<qint64>("blockSize");
    QTest::addColumn<qint64>("groups");
    QTest::addColumn<qint64>("groupSize");
    QTest::addColumn<qint64>("padding");
    QTest::addColumn<qint64>("blocks");
    QTest::addColumn<qint64>("blocksPerRequest");
    QTest::addColumn<qint64>("tokens");
    // Pool 40 GiB = 42,949,672,960 B per rank, 8,192-token requests, max_num_batched_tokens
    // 8,192, block 16 (vllm/v1/core/kv_cache_utils.py).
    // Gemma-3: 52 sliding + 10 full, same 131,072 B page (8,192 × 16). group_size = 10 (52 ≥
    // 1.5 × 10): 6 sliding groups (8 padding layers) + 1 full = 7. blocks = pool // page // 10
    // = 32,768; tokens = 32,768 // 7 × 16 = 74,896. Per request: sliding cdiv(min(1023 + 8192,
    // 8192), 16) + 1 = 513 per group × 6 + full 512 = 3,590.
    QTest::newRow("gemma-3-27b-it") << "google__gemma-3-27b-it.json" << 1 << 131'072LL << 16LL
                                    << 7LL << 10LL << 8LL << 32'768LL << 3'590LL << 74'896LL;
    // gpt-oss: 12 + 12, page 2,048 × 16 = 32,768; group 12; blocks = pool // 32,768 // 12 =
    // 109,226; tokens = 109,226 // 2 × 16 = 873,808; per request 513 + 512 = 1,025.
    QTest::newRow("gpt-oss-20b") << "openai__gpt-oss-20b.json" << 1 << 32'768LL << 16LL << 2LL
                                 << 12LL << 0LL << 109'226LL << 1'025LL << 873'808LL;
    // Nemotron-H TP 8: mamba state per rank conv 3 × 20,480 / 8 × 2 = 15,360 + SSM 32 × 64 ×
    // 256 × 2 = 1,048,576 → 1,063,936 B; attention 1 head × 256 × 2 = 512 B per token. Block =
    // 16 × cdiv(1,063,936, 16 × 512) = 2,080; page 1,064,960 (mamba padded). 10 full + 54
    // mamba: group 10, 1 + 6 groups, 6 padding. blocks = pool // page // 10 = 4,032; tokens =
    // 4,032 // 7 × 2,080 = 1,198,080; per request cdiv(8192, 2080) = 4 + 6 mamba pages = 10.
    QTest::newRow("nemotron-h-56b tp8")
        << "nvidia__Nemotron-H-56B-Base-8K.json" << 8 << 1'064'960LL << 2'080LL << 7LL << 10LL
        << 6LL << 4'032LL << 10LL << 1'198'080LL;
    // Qwen3.5 TP 8: GDN per rank conv 3 × 8,192 / 8 × 2 = 6,144 + recurrent 4 × 128 × 128 × 4 =
    // 262,144 → 268,288 B; attention max(1, 2 // 8) × 512 × 2 = 1,024 B per token. Block = 16 ×
    // cdiv(268,288, 16,384) = 272; page 278,528. 30 linear + 10 full: group 10, 3 + 1 groups.
    // blocks = pool // page // 10 = 15,420; tokens = 15,420 // 4 × 272 = 1,048,560; per request
    // 3 + cdiv(8192, 272) = 34.
    QTest::newRow("qwen3.5-35b-a3b tp8") << "Qwen__Qwen3.5-35B-A3B.json" << 8 << 278'528LL << 272LL
                                         << 4LL << 10LL << 0LL << 15'420LL << 34LL << 1'048'560LL;
    // Llama-3.2-11B-Vision: 32 self-attention layers (FullAttentionSpec) and 8 cross-attention
    // layers (CrossAttentionSpec, its own type → hybrid), both 8 × 256 × 2 = 4,096 B per token,
    // page 65,536. group_size 8 (32 ≥ 1.5 × 8): 4 + 1 groups. blocks = pool // page // 8 =
    // 81,920; tokens = 81,920 // 5 × 16 = 262,144. Per request: 4 × cdiv(8192, 16) + the
    // encoder's cdiv(6,404, 16) = 401 (max_num_encoder_input_tokens = encoder length, not the
    // text length) = 2,449.
    QTest::newRow("llama-3.2-11b-vision cross")
        << "meta-llama__Llama-3.2-11B-Vision-Instruct.json" << 1 << 65'536LL << 16LL << 5LL << 8LL
        << 0LL << 81'920LL << 2'449LL << 262'144LL;
    // DeepSeek-V3.2: MLA (1,152) and indexer (132) specs are one type (UniformTypeKVCacheSpecs),
    // one group: blocks = pool // (61 × 1,284 × 16) = 34,272; tokens × 16 = 548,352.
    QTest::newRow("deepseek-v3.2 tp8") << "deepseek-ai__DeepSeek-V3.2.json" << 8 << 20'544LL << 16LL
                                       << 1LL << 61LL << 0LL << 34'272LL << 512LL << 548'352LL;
}

void TestLayers::vllmPaging() {
    QFETCH(QString, file);
    QFETCH(int, tp);
    QFETCH(qint64, pageBytes);
    QFETCH(qint64, blockSize);
    QFETCH(qint64, groups);
    QFETCH(qint64, groupSize);
    QFETCH(qint64, padding);
    QFETCH(qint64, blocks);
    QFETCH(qint64, blocksPerRequest);
    QFETCH(qint64, tokens);
    auto m = load(file);
    QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
    Deployment d;
    d.tp = tp;
    d.poolGiB = 40;
    auto r = evaluate(m.value(), loadGpu("h200").value(), d);
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->pool.poolBytes, 42'949'672'960LL);
    QCOMPARE(r->pageBytes, pageBytes);
    QCOMPARE(r->blockSize, blockSize);
    QCOMPARE(r->vllmKvCacheGroups, groups);
    QCOMPARE(r->vllmGroupSize, groupSize);
    QCOMPARE(r->vllmPaddingLayers, padding);
    QCOMPARE(r->blocksPerRank, blocks);
    QCOMPARE(r->vllmBlocksPerRequest, blocksPerRequest);
    QCOMPARE(r->vllmTokens, tokens);
    QCOMPARE(r->vllmConcurrency,
             static_cast<double>(blocks) / static_cast<double>(blocksPerRequest));
    // _max_memory_usage_bytes_from_groups: group_size × page × Σ blocks needed.
    QCOMPARE(r->vllmRequestBytesPerRank, groupSize * pageBytes * blocksPerRequest);
}

void TestLayers::crossPagesFixed() {
    // Doubling the context adds self-attention blocks only: the 8 cross-attention layers hold
    // the encoder's 401 blocks per request either way (CrossAttentionSpec).
    auto m = load(QStringLiteral("meta-llama__Llama-3.2-11B-Vision-Instruct.json"));
    QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
    Deployment d;
    d.poolGiB = 40;
    d.context = 8'192;
    auto a = evaluate(m.value(), loadGpu("h200").value(), d);
    d.context = 16'384;
    auto b = evaluate(m.value(), loadGpu("h200").value(), d);
    QVERIFY(a.ok() && b.ok());
    QCOMPARE(b->vllmBlocksPerRequest - a->vllmBlocksPerRequest, 4LL * (1'024 - 512));
    QCOMPARE(a->vllmBlocksPerRequest - 4LL * 512, 401LL);
    QCOMPARE(a->vllmTokens, b->vllmTokens);
}

void TestLayers::deepseekV4Specs_data() {
    QTest::addColumn<int>("group");
    QTest::addColumn<QString>("specs");
    QTest::addColumn<qint64>("stateBytes");
    // DeepSeek-V4-Flash: head_dim 512, qk_rope_head_dim 64, index_head_dim 128, sliding_window
    // 128, block size 256. "name block window entries entry page", page = round_up(entries ×
    // entry, 576). fp8_ds_mla entry = 448 NoPE + 64 × 2 RoPE + 448 / 64 scales + 1 pad = 584.
    // SWA cache: 64 × 584 = 37,376 → 37,440 (65 × 576).
    // Ratio 0 (layers 0, 1): the SWA cache only, no compressor state.
    QTest::newRow("v4-flash sliding") << 0 << "swa_cache 64 128 64 584 37440" << 0LL;
    // Ratio 4 (21 layers): attn 256 // 4 = 64 entries × 584 → 37,440; compressor state coff 2:
    // 2 × 2 × 512 fp32 = 8,192 B per slot, block 4 → 32,768 → 32,832 (57 × 576), window 2 × 4
    // = 8; indexer key 128 + 128 // 128 × 4 = 132 B × 64 = 8,448 → 8,640 (15 × 576); indexer
    // compressor 2 × 2 × 128 × 4 = 2,048 B × 4 = 8,192 → 8,640. State per request: 8 × 8,192 +
    // 8 × 2,048 = 81,920.
    QTest::newRow("v4-flash ratio 4")
        << 1
        << "swa_cache 64 128 64 584 37440|attn 256 0 64 584 37440|compressor.state_cache 4 8 4 "
           "8192 32832|indexer.k_cache 256 0 64 132 8640|indexer.compressor.state_cache 4 8 4 "
           "2048 8640"
        << 81'920LL;
    // Ratio 128 (20 layers): attn 256 // 128 = 2 entries × 584 = 1,168 → 1,728 (3 × 576);
    // compressor coff 1: 2 × 512 × 4 = 4,096 B per slot, block 8 → 32,768 → 32,832, window 128.
    // State per request: 128 × 4,096 = 524,288.
    QTest::newRow("v4-flash ratio 128")
        << 2
        << "swa_cache 64 128 64 584 37440|attn 256 0 2 584 1728|compressor.state_cache 8 128 8 "
           "4096 32832"
        << 524'288LL;
}

void TestLayers::deepseekV4Specs() {
    QFETCH(int, group);
    QFETCH(QString, specs);
    QFETCH(qint64, stateBytes);
    auto m = load(QStringLiteral("deepseek-ai__DeepSeek-V4-Flash.json"));
    QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
    const LayerGroup& g = m->layerGroups.at(static_cast<std::size_t>(group));
    QVERIFY(g.deepseekV4);
    QStringList got;
    for (const Dsv4CacheSpec& s : deepseekV4CacheSpecs(g, 256))
        got << QStringLiteral("%1 %2 %3 %4 %5 %6")
                   .arg(QString::fromStdString(s.name))
                   .arg(s.blockSize)
                   .arg(s.window)
                   .arg(s.entriesPerBlock)
                   .arg(s.entryBytes)
                   .arg(s.pageBytes);
    QCOMPARE(got.join(QLatin1Char('|')), specs);
    QCOMPARE(deepseekV4StateBytes(g), stateBytes);
}

void TestLayers::deepseekV4Paging() {
    // vllm/v1/core/kv_cache_utils.py on DeepSeek-V4-Flash, block 256 (kvscope's default 16 is
    // not a multiple of 256), pool 40 GiB, 8,192-token requests, max_num_batched_tokens 8,192.
    // Groups: full MLA {37,440 × 21 C4A, 8,640 × 21 indexer keys, 1,728 × 20 C128A} → 21
    // tuples; SWA (64, 128) 43 layers → 43; C4 state (4, 8): 21 × 32,832 → padded to 37,440 and
    // 21 × 8,640 → 21; C128 state (8, 128): 20 × 32,832 → 37,440 → 20. _approximate_gcd([21,
    // 43, 21, 20], ≥ 21) = 22 (padding 1 + 1 + 1 + 2 = 5; 21 would pad 21). SWA splits into
    // cdiv(43, 22) = 2 groups (22 + 21): 1 + 2 + 1 + 1 = 5 groups. Slots: 37,440 × 22, 8,640 ×
    // 21, 1,728 × 20 → one block = 823,680 + 181,440 + 34,560 = 1,039,680 B. blocks =
    // 42,949,672,960 // 1,039,680 = 41,310. Per request: full cdiv(8,192, 256) = 32; SWA
    // cdiv(min(127 + 8,192, 8,192), 64) + 1 = 129 × 2; C4 state 8,192 / 4 + 1 = 2,049; C128
    // state 8,192 / 8 + 1 = 1,025 → 3,364. Tokens = int(41,310 / 3,364 × 8,192) = 100,597.
    auto m = load(QStringLiteral("deepseek-ai__DeepSeek-V4-Flash.json"));
    QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
    Deployment d;
    d.poolGiB = 40;
    auto r = evaluate(m.value(), loadGpu("h200").value(), d);
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().message().c_str());
    QCOMPARE(r->pageBytes, 1'039'680LL);
    QCOMPARE(r->blockSize, 256LL);
    QCOMPARE(r->vllmKvCacheGroups, 5LL);
    QCOMPARE(r->vllmGroupSize, 22LL);
    QCOMPARE(r->vllmPaddingLayers, 5LL);
    QCOMPARE(r->blocksPerRank, 41'310LL);
    QCOMPARE(r->vllmBlocksPerRequest, 3'364LL);
    QCOMPARE(r->vllmTokens, 100'597LL);
    QCOMPARE(r->vllmConcurrency, 41'310.0 / 3'364.0);
    // _max_memory_usage_bytes_from_groups: 22 tuples × 3,364 pages × (37,440 + 8,640 + 1,728).
    QCOMPARE(r->vllmRequestBytesPerRank, 22LL * 3'364 * 47'808);
    // vLLM PR #44454 (DeepSeek-V4-Flash, fp8 KV): the packed block replaced the earlier
    // (Σ distinct pages) × tuples = 47,808 × 22 = 1,051,776 B block and the KV cache grew from
    // 329,601 to 333,437 tokens (+1.16%): the same ratio as 1,051,776 / 1,039,680.
    QVERIFY(std::abs(47'808.0 * 22 / static_cast<double>(r->pageBytes) - 333'437.0 / 329'601.0) <
            1e-4);
    // The layer figures are the same at TP 8: one latent head, replicated.
    d.tp = 8;
    auto r8 = evaluate(m.value(), loadGpu("h200").value(), d);
    QVERIFY(r8.ok());
    QCOMPARE(r8->pageBytes, 1'039'680LL);
}

void TestLayers::deepseekV4OutsideVllmLayout() {
    // A compress ratio vLLM does not build (CompressorStateCache asserts ratio in [4, 128])
    // keeps the estimate, and the warning says why.
    std::ifstream f(fixture2026(QStringLiteral("deepseek-ai__DeepSeek-V4-Flash.json")));
    auto cfg = nlohmann::json::parse(f);
    cfg["compress_ratios"][3] = 16;
    auto m = parseModelConfig(cfg.dump(), "v4-ratio-16");
    QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
    for (const auto& g : m->layerGroups)
        QVERIFY(!g.deepseekV4);
    bool named = false;
    for (const auto& w : m->warnings)
        named = named || (w.find("compress ratios 0, 4 or 128") != std::string::npos);
    QVERIFY(named);
    auto ok = load(QStringLiteral("deepseek-ai__DeepSeek-V4-Flash.json"));
    QVERIFY(ok.ok());
    bool exact = false;
    for (const auto& w : ok->warnings)
        exact = exact || (w.find("fp8_ds_mla layout") != std::string::npos &&
                          w.find("approximated") == std::string::npos);
    QVERIFY(exact);
}

void TestLayers::reportsListGroups() {
    auto m = load(QStringLiteral("openai__gpt-oss-20b.json"));
    QVERIFY(m.ok());
    Deployment d;
    d.poolGiB = 40;
    const GpuSpec gpu = loadGpu("h200").value();
    auto r = evaluate(m.value(), gpu, d);
    QVERIFY(r.ok());
    const auto j = nlohmann::json::parse(jsonReport(m.value(), gpu, r.value()));
    const auto& groups = j["model"]["layer_groups"];
    QCOMPARE(groups.size(), std::size_t(2));
    QCOMPARE(groups[0]["kind"].get<std::string>(), std::string("sliding"));
    QCOMPARE(groups[0]["window"].get<std::int64_t>(), 128LL);
    QCOMPARE(groups[0]["layers"].size(), std::size_t(12));
    QCOMPARE(groups[0]["layers"][1].get<std::int64_t>(), 2LL);
    QCOMPARE(groups[1]["kind"].get<std::string>(), std::string("full"));
    QVERIFY(groups[1]["window"].is_null());
    for (const auto& g : groups) {
        QCOMPARE(g["kv_heads"].get<std::int64_t>(), 8LL);
        QCOMPARE(g["head_dim_k"].get<std::int64_t>(), 64LL);
        QCOMPARE(g["head_dim_v"].get<std::int64_t>(), 64LL);
        QCOMPARE(g["bytes_per_token_per_layer"].get<std::int64_t>(), 2'048LL);
        QCOMPARE(g["state_bytes_per_request_per_layer"].get<std::int64_t>(), 0LL);
    }
    QCOMPARE(j["model"]["mtp_layers"].get<std::int64_t>(), 0LL);
    QCOMPARE(j["vllm_kv_cache_groups"].get<std::int64_t>(), 2LL);
    const std::string text = textReport(m.value(), gpu, r.value());
    QVERIFY(text.find("Layer groups") != std::string::npos);
    QVERIFY(text.find("12 sliding (128)") != std::string::npos);
    QVERIFY(text.find("layer_types + sliding_window") != std::string::npos);
    // Qwen3.5: linear state and the MTP layer are listed too.
    auto q = load(QStringLiteral("Qwen__Qwen3.5-35B-A3B.json"));
    QVERIFY(q.ok());
    auto rq = evaluate(q.value(), gpu, d);
    QVERIFY(rq.ok());
    const auto jq = nlohmann::json::parse(jsonReport(q.value(), gpu, rq.value()));
    QCOMPARE(jq["model"]["mtp_layers"].get<std::int64_t>(), 1LL);
    QCOMPARE(jq["model"]["layer_groups"][0]["kind"].get<std::string>(), std::string("linear"));
    QCOMPARE(
        jq["model"]["layer_groups"][0]["state_bytes_per_request_per_layer"].get<std::int64_t>(),
        2'146'304LL);
    const std::string tq = textReport(q.value(), gpu, rq.value());
    QVERIFY(tq.find("1 mtp") != std::string::npos);
}

void TestLayers::perRankState() {
    // Nemotron-H at TP 8: request bytes per rank = 10 attention layers × 512 B × 8,192 tokens
    // + 54 × 1,063,936 B of mamba state.
    auto m = load(QStringLiteral("nvidia__Nemotron-H-56B-Base-8K.json"));
    QVERIFY(m.ok());
    Deployment d;
    d.tp = 8;
    d.poolGiB = 40;
    auto r = evaluate(m.value(), loadGpu("h200").value(), d);
    QVERIFY(r.ok());
    QCOMPARE(r->requestBytesPerRank, 10LL * 512 * 8192 + 54LL * 1'063'936);
    // Gemma-3 at 32k: sliding layers stop at 1,024 tokens.
    auto g = load(QStringLiteral("google__gemma-3-27b-it.json"));
    QVERIFY(g.ok());
    Deployment dg;
    dg.context = 32768;
    dg.poolGiB = 40;
    auto rg = evaluate(g.value(), loadGpu("h200").value(), dg);
    QVERIFY(rg.ok());
    QCOMPARE(rg->requestBytes, 52LL * 8192 * 1024 + 10LL * 8192 * 32768);
}

void TestLayers::pythonLiterals() {
    // Nemotron-H's time_step_limit holds Infinity; Python's json (and the engines) read it.
    auto m = load(QStringLiteral("nvidia__Nemotron-H-56B-Base-8K.json"));
    QVERIFY2(m.ok(), m.ok() ? "" : m.error().message().c_str());
    auto j =
        parseJsonBounded(R"({"a": [0.0, Infinity, -Infinity, NaN], "b": "NaN Infinity"})", "x");
    QVERIFY(j.ok());
    const auto& a = j.value()["a"];
    QVERIFY(std::isinf(a[1].get<double>()) && a[1].get<double>() > 0);
    QVERIFY(std::isinf(a[2].get<double>()) && a[2].get<double>() < 0);
    QVERIFY(std::isnan(a[3].get<double>()));
    QCOMPARE(j.value()["b"].get<std::string>(), std::string("NaN Infinity")); // strings untouched
    QVERIFY(!parseJsonBounded(R"({"a": Infinityx})", "x").ok());
    QVERIFY(!parseJsonBounded(R"({"a": nan})", "x").ok()); // Python spells it NaN only
}

void TestLayers::hostile_data() {
    QTest::addColumn<QByteArray>("json");
    QTest::addColumn<QString>("field");
    QTest::addColumn<QString>("rule");
    QTest::newRow("unknown layer kind")
        << tiny(R"("layer_types": ["full_attention", "full_attention", "full_attention",
                   "foo_attention"])")
        << "layer_types[3]"
        << R"("foo_attention" is not a known layer kind)";
    QTest::newRow("layer_types length")
        << tiny(R"("layer_types": ["full_attention", "full_attention"])") << "layer_types"
        << "must be an array with one entry per layer (4), got 2";
    QTest::newRow("layer kind not a string")
        << tiny(R"("layer_types": ["full_attention", 7, "full_attention", "full_attention"])")
        << "layer_types[1]"
        << "must be a string";
    QTest::newRow("hybrid_override_pattern length")
        << tiny(R"("hybrid_override_pattern": "M*-")") << "hybrid_override_pattern"
        << "must have one character per layer (4), got 3";
    QTest::newRow("hybrid_override_pattern unknown char")
        << tiny(R"("hybrid_override_pattern": "**?*")") << "hybrid_override_pattern[2]"
        << "'?' is not a known layer kind";
    QTest::newRow("mamba without its geometry")
        << tiny(R"("hybrid_override_pattern": "M*M*")") << "mamba_num_heads"
        << "missing (the config has mamba layers)";
    QTest::newRow("linear without its geometry")
        << tiny(R"("layer_types": ["linear_attention", "full_attention", "linear_attention",
                   "full_attention"])")
        << "linear_num_key_heads"
        << "missing (layer_types names linear_attention layers)";
    QTest::newRow("sliding without a window")
        << tiny(R"("layer_types": ["sliding_attention", "full_attention", "full_attention",
                   "full_attention"])")
        << "sliding_window"
        << "must be a positive integer";
    QTest::newRow("cross layer out of range")
        << tiny(R"("cross_attention_layers": [1, 9])") << "cross_attention_layers[1]"
        << "must be a layer index in [0, 4)";
    QTest::newRow("unknown state dtype")
        << tiny(R"("layer_types": ["linear_attention", "full_attention", "linear_attention",
                   "full_attention"], "linear_num_key_heads": 2, "linear_key_head_dim": 64,
                   "linear_num_value_heads": 4, "linear_value_head_dim": 64,
                   "linear_conv_kernel_dim": 4, "mamba_ssm_dtype": "float8")")
        << "mamba_ssm_dtype"
        << "is not a state dtype";
}

void TestLayers::hostile() {
    QFETCH(QByteArray, json);
    QFETCH(QString, field);
    QFETCH(QString, rule);
    auto m = parseModelConfig(
        std::string_view(json.constData(), static_cast<std::size_t>(json.size())), "bad");
    QVERIFY2(!m.ok(), json.constData());
    QCOMPARE(QString::fromStdString(m.error().field), field);
    QVERIFY2(QString::fromStdString(m.error().rule).contains(rule), m.error().message().c_str());
    QVERIFY(m.error().message().find('\n') == std::string::npos);
    QVERIFY(test::validUtf8(m.error().message()));
}

void TestLayers::hostileBytesOneUtf8Line() {
    // Invalid UTF-8 inside a layer kind, inside the pattern, and as raw bytes outside strings:
    // each gives exactly one error line, valid UTF-8, naming the field where there is one.
    const std::vector<std::pair<std::string, std::string>> cases = {
        {std::string(R"({"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512, )"
                     R"("layer_types": ["full_attention", "\xff\xfe)") +
             "\x01" + R"(_attention"]})",
         "config.json"},
        {std::string(R"({"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512, )"
                     R"("layer_types": ["full_attention", "\u001b[31mred\u0000"]})"),
         "layer_types[1]"},
        {std::string(R"({"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512, )"
                     R"("hybrid_override_pattern": "*)") +
             "\xc3" + R"("})",
         "config.json"},
        {std::string(R"({"num_hidden_layers": 2, "num_attention_heads": 8, )") + "\xe2\x82" +
             "\x1b[31m" + R"(: 1})",
         "config.json"},
        {std::string(R"({"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512, )"
                     R"("torch_dtype": "\u0007", "layer_types": ["x\u2028", "full_attention"]})"),
         "layer_types[0]"},
    };
    for (const auto& [text, field] : cases) {
        auto m = parseModelConfig(text, "bytes");
        QVERIFY(!m.ok());
        const std::string line = m.error().message();
        QVERIFY2(test::validUtf8(line), line.c_str());
        QVERIFY(line.find('\n') == std::string::npos);
        QVERIFY(line.find('\x1b') == std::string::npos);
        QVERIFY2(m.error().field == field, line.c_str());
    }
}

void TestLayers::sanitize() {
    QCOMPARE(sanitizeForMessage("plain"), std::string("plain"));
    QCOMPARE(sanitizeForMessage("a\xff"
                                "b"),
             std::string("a\xEF\xBF\xBD"
                         "b"));
    QCOMPARE(sanitizeForMessage("tab\there"), std::string("tab\\x09here"));
    QCOMPARE(sanitizeForMessage("\xc3\xa9t\xc3\xa9"), std::string("\xc3\xa9t\xc3\xa9"));
    QCOMPARE(sanitizeForMessage("\xe2\x80\xa8"), std::string("\\u2028"));
    QCOMPARE(sanitizeForMessage("\xc0\xaf"), std::string("\xEF\xBF\xBD\xEF\xBF\xBD")); // overlong
    QCOMPARE(sanitizeForMessage(std::string(200, 'x'), 10), std::string(10, 'x') + "...");
}

QTEST_GUILESS_MAIN(TestLayers)
#include "tst_layers.moc"
