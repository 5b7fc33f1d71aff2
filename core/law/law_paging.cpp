// vLLM's paging of the KV pool per rank (vllm/v1/core/kv_cache_utils.py); declared in law_detail.h.
#include "core/format.h"
#include "core/law/law_detail.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

namespace kvscope::lawdetail {

namespace {

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

/// One layer group as a vLLM KV cache spec.
struct Spec {
    const GroupCost* c;
    std::int64_t perToken = 0; ///< attention: bytes per token; mamba: 0
    std::int64_t statePage = 0;
    std::int64_t block = 0;
    std::int64_t page = 0;
};

/// The specs vLLM pages (layer-less groups apart). Cross-attention layers are CrossAttentionSpec
/// (vllm/v1/kv_cache_interface.py): an attention page of the same shape whose request needs
/// cdiv(max_num_encoder_input_tokens, block) blocks — for encoder-decoder models vllm/config/
/// vllm.py sets that to the encoder length (get_encdec_max_encoder_len) — whatever the text
/// length; a spec type of its own, so the model pages as a hybrid.
std::vector<Spec> pagedSpecs(const std::vector<GroupCost>& costs, bool& anyMamba, Paging& pg) {
    std::vector<Spec> specs;
    bool anyCross = false;
    for (const GroupCost& c : costs) {
        if (c.kind == LayerKind::None)
            continue;
        Spec s{&c};
        if (c.kind == LayerKind::Cross) {
            const std::int64_t encoder = c.group ? c.group->encoderTokens : 0;
            if (encoder <= 0) {
                pg.notes.push_back("cross-attention layers without an encoder length are not "
                                   "paged (vLLM sizes them by max_num_encoder_input_tokens)");
                continue;
            }
            anyCross = true;
            s.perToken = c.fixedBytesRank / encoder;
        } else if (isFixedState(c.kind)) {
            s.statePage = c.fixedBytesRank;
            anyMamba = true;
        } else {
            s.perToken = c.tokenBytesRank;
        }
        specs.push_back(s);
    }
    if (anyCross)
        pg.notes.push_back("cross-attention layers page as CrossAttentionSpec: each request holds "
                           "cdiv(encoder tokens, block) blocks of them, not growing with its text "
                           "(vLLM V1's scheduler runs Whisper as its encoder-decoder model)");
    return specs;
}

/// A request's blocks in one spec at max_model_len (max_memory_usage_bytes / page):
///  FullAttentionSpec: cdiv(max_model_len / DCP, block)
///  SlidingWindowSpec: cdiv(min(W - 1 + max_num_batched_tokens, max_model_len), block) + 1
///  ChunkedLocalAttentionSpec: cdiv(min(C + max_num_batched_tokens, max_model_len), block)
///  MambaSpec (mamba_cache_mode none): one page
///  CrossAttentionSpec: cdiv(max_num_encoder_input_tokens, block)
/// (vllm/v1/kv_cache_interface.py)
std::int64_t blocksNeeded(const Spec& s, const Deployment& d, std::int64_t ctxRank) {
    const GroupCost& c = *s.c;
    if (isFixedState(c.kind))
        return 1;
    if (c.kind == LayerKind::Cross)
        return ceilDiv(c.group->encoderTokens, s.block);
    if (c.kind == LayerKind::Sliding)
        return ceilDiv(std::min(*c.window - 1 + d.maxNumBatchedTokens, d.context), s.block) + 1;
    if (c.kind == LayerKind::Chunked)
        return ceilDiv(std::min(*c.window + d.maxNumBatchedTokens, d.context), s.block);
    return ceilDiv(ctxRank, s.block);
}

/// UniformTypeKVCacheSpecs.is_uniform_type: every layer needs the same token slots.
bool uniformType(const std::vector<Spec>& specs) {
    auto fullLike = [](LayerKind k) {
        return k == LayerKind::Full || k == LayerKind::Mla || k == LayerKind::Compressed;
    };
    const LayerKind k0 = specs.front().c->kind;
    for (const Spec& s : specs) {
        const LayerKind k = s.c->kind;
        if (fullLike(k0) ? !fullLike(k) : (k != k0 || s.c->window != specs.front().c->window))
            return false;
    }
    return true;
}

/// One group: pages summed over layers (UniformTypeKVCacheSpecs).
void uniformPaging(std::vector<Spec>& specs, const Deployment& d, std::int64_t pool,
                   std::int64_t ctxRank, Paging& pg) {
    std::int64_t total = 0, need = 0;
    for (Spec& s : specs) {
        s.block = d.blockSize;
        s.page = s.perToken * s.block;
        total += s.c->n * s.page;
        need = std::max(need, blocksNeeded(s, d, ctxRank));
    }
    pg.pageBytes = specs.size() == 1 ? specs.front().page : total;
    pg.blockSize = d.blockSize;
    pg.groups = 1;
    pg.groupSize = specs.size() == 1 ? specs.front().c->n : 1;
    pg.blocks = pool / total;
    pg.blocksPerRequest = need;
    // UniformTypeKVCacheSpecs.max_memory_usage_bytes: max pages × the summed page.
    pg.requestBytes = need * total;
    pg.tokens = pg.blocks * d.blockSize * d.dcp;
    pg.concurrency = static_cast<double>(pg.blocks) / static_cast<double>(need);
}

/// With mamba layers the attention block grows until an attention page holds a mamba state, in
/// multiples of the kernel alignment (16; MLA backends 64), and the mamba page is padded to the
/// attention page (HybridAttentionMambaModelConfig.verify_and_update_config,
/// vllm/model_executor/models/config.py, prefix caching off).
std::int64_t hybridBlock(const std::vector<Spec>& specs, std::int64_t block, bool mla, Paging& pg) {
    std::int64_t statePage = 0, attn1 = 0;
    for (const Spec& s : specs) {
        statePage = std::max(statePage, s.statePage);
        if (!isFixedState(s.c->kind) && attn1 == 0)
            attn1 = s.perToken;
    }
    if (attn1 <= 0)
        return block;
    const std::int64_t align = mla ? 64 : 16;
    const std::int64_t need = align * ceilDiv(statePage, align * attn1);
    if (block >= need)
        return block;
    pg.notes.push_back("vLLM raises the attention block size to " + withCommas(need) +
                       " tokens so that one page holds a mamba state");
    return need;
}

/// unify_kv_cache_spec_page_size: smaller attention pages take a proportionally larger block;
/// mamba pages are padded (page_size_padded). Returns the common page.
std::int64_t unifyPages(std::vector<Spec>& specs, std::int64_t block, Paging& pg) {
    std::int64_t maxPage = 0;
    for (Spec& s : specs) {
        s.block = block;
        s.page = isFixedState(s.c->kind) ? s.statePage : s.perToken * block;
        maxPage = std::max(maxPage, s.page);
    }
    for (Spec& s : specs) {
        if (s.page == maxPage)
            continue;
        if (isFixedState(s.c->kind)) {
            s.page = maxPage;
            continue;
        }
        if (maxPage % s.page != 0)
            pg.notes.push_back("page sizes do not divide (" + withCommas(s.page) + " vs " +
                               withCommas(maxPage) +
                               " B): vLLM refuses to unify them; the "
                               "figures assume padded pages");
        s.block = s.block * (maxPage / s.page);
        if (s.block == 0)
            s.block = block;
        s.page = maxPage;
    }
    return maxPage;
}

/// _get_kv_cache_groups_uniform_page_size: groups of group_size layers, padding layers.
void hybridGroups(const std::vector<Spec>& specs, const Deployment& d, std::int64_t pool,
                  std::int64_t ctxRank, std::int64_t block, std::int64_t maxPage, Paging& pg) {
    std::int64_t minN = std::numeric_limits<std::int64_t>::max(), maxN = 0;
    for (const Spec& s : specs) {
        minN = std::min(minN, s.c->n);
        maxN = std::max(maxN, s.c->n);
    }
    std::int64_t groupSize = minN;
    if (static_cast<double>(maxN) < static_cast<double>(minN) * 1.5)
        groupSize = maxN;
    std::int64_t groups = 0, padding = 0, need = 0,
                 minBlock = std::numeric_limits<std::int64_t>::max();
    for (const Spec& s : specs) {
        const std::int64_t g = ceilDiv(s.c->n, groupSize);
        groups += g;
        padding += g * groupSize - s.c->n;
        need += g * blocksNeeded(s, d, ctxRank);
        minBlock = std::min(minBlock, s.block);
    }
    pg.pageBytes = maxPage;
    pg.blockSize = block;
    pg.groups = groups;
    pg.groupSize = groupSize;
    pg.paddingLayers = padding;
    pg.blocks = pool / maxPage / groupSize;
    pg.blocksPerRequest = need;
    // _max_memory_usage_bytes_from_groups: group_size × page × Σ blocks needed.
    pg.requestBytes = groupSize * maxPage * need;
    pg.tokens = pg.blocks / groups * minBlock * d.dcp;
    pg.concurrency = static_cast<double>(pg.blocks) / static_cast<double>(need);
    if (padding > 0)
        pg.notes.push_back("vLLM adds " + std::to_string(padding) + " padding layer(s) to make " +
                           std::to_string(groups) + " KV cache groups of " +
                           std::to_string(groupSize) + " layers");
}

/// _approximate_gcd: the d in [lower, max] with the least Σ round-up padding; ties → larger d.
std::int64_t approximateGcd(const std::vector<std::int64_t>& xs, std::int64_t lower) {
    const std::int64_t hi = *std::max_element(xs.begin(), xs.end());
    std::int64_t best = std::max<std::int64_t>(1, lower), bestPad = -1;
    for (std::int64_t dd = best; dd <= hi; ++dd) {
        std::int64_t pad = 0;
        for (std::int64_t x : xs)
            pad += (dd - x % dd) % dd;
        if (bestPad < 0 || pad <= bestPad) {
            best = dd;
            bestPad = pad;
        }
    }
    return best;
}

/// One DeepSeek-V4 UniformTypeKVCacheSpecs: its layers counted per (padded) page size.
struct Dsv4Group {
    std::int64_t block = 0, window = 0;         ///< window 0: the full-MLA group
    std::map<std::int64_t, std::int64_t> pages; ///< page bytes → layers
    std::int64_t tuples() const {
        std::int64_t t = 0;
        for (const auto& [page, n] : pages)
            t = std::max(t, n);
        return t;
    }
};

/// group_and_unify_kv_cache_specs: every MLAAttentionSpec in one group, SlidingWindowMLASpecs
/// grouped by (block_size, sliding_window); then _get_kv_cache_groups_uniform_groups pads each
/// sliding page to the nearest full-MLA page not smaller. False when vLLM's asserts would fail.
bool dsv4Groups(const std::vector<GroupCost>& costs, std::int64_t block,
                std::vector<Dsv4Group>& out, Paging& pg) {
    out.assign(1, Dsv4Group{block, 0, {}});
    for (const GroupCost& c : costs) {
        if (c.group == nullptr)
            continue;
        for (const Dsv4CacheSpec& s : deepseekV4CacheSpecs(*c.group, block)) {
            auto it = std::find_if(out.begin(), out.end(), [&](const Dsv4Group& g) {
                return s.full ? g.window == 0 : g.block == s.blockSize && g.window == s.window;
            });
            if (it == out.end())
                it = out.insert(out.end(), Dsv4Group{s.blockSize, s.window, {}});
            it->pages[s.pageBytes] += c.n;
        }
    }
    if (out.front().pages.empty())
        return false;
    for (std::size_t i = 1; i < out.size(); ++i) {
        std::map<std::int64_t, std::int64_t> padded;
        for (const auto& [page, n] : out[i].pages) {
            auto up = out.front().pages.lower_bound(page);
            if (up == out.front().pages.end()) {
                pg.notes.push_back("a DeepSeek-V4 sliding page (" + withCommas(page) +
                                   " B) exceeds every full-MLA page: vLLM asserts");
                return false;
            }
            padded[up->first] += n;
        }
        out[i].pages = padded;
    }
    return true;
}

/// DeepSeek-V4's packed paging (vllm/v1/core/kv_cache_utils.py): layer tuples aligned by
/// _approximate_gcd, sliding groups split into cdiv(tuples, T) groups (layer_tuples[i::k]);
/// _get_kv_cache_config_packed: one block = Σ page × slots (slots = most layers of that page in
/// any group), num_blocks = pool // that; get_max_concurrency_for_kv_cache_config: Σ over groups
/// of each spec's pages at max_model_len; get_kv_cache_capacity: tokens = concurrency ·
/// max_model_len; _max_memory_usage_bytes_from_groups: Σ T · pages · Σ full-MLA page sizes.
bool dsv4Paging(const std::vector<GroupCost>& costs, const Deployment& d, std::int64_t pool,
                std::int64_t ctxRank, Paging& pg) {
    // DeepseekSparseSWABackend.get_preferred_block_size: 256 (the C4A block of 256 // 4 = 64
    // entries sets the page every other cache is padded to).
    const std::int64_t block = d.blockSize % 256 == 0 ? d.blockSize : 256;
    if (block != d.blockSize)
        pg.notes.push_back("DeepSeek-V4 pages at vLLM's preferred block size 256, not " +
                           std::to_string(d.blockSize));
    std::vector<Dsv4Group> groups;
    if (!dsv4Groups(costs, block, groups, pg))
        return false;
    std::vector<std::int64_t> tuples;
    for (const Dsv4Group& g : groups)
        tuples.push_back(g.tuples());
    const std::int64_t T = approximateGcd(tuples, tuples.front());
    std::map<std::int64_t, std::int64_t> slots = groups.front().pages;
    std::int64_t need = ceilDiv(ctxRank, block), maxTuples = tuples.front(), kvGroups = 1,
                 padding = 0, tupleBytes = 0;
    for (const auto& [page, n] : groups.front().pages)
        tupleBytes += page;
    for (std::size_t i = 0; i < groups.size(); ++i)
        padding += ceilDiv(tuples[i], T) * T - tuples[i];
    for (std::size_t i = 1; i < groups.size(); ++i) {
        const Dsv4Group& g = groups[i];
        const std::int64_t k = ceilDiv(tuples[i], T);
        const std::int64_t perGroup =
            ceilDiv(std::min(g.window - 1 + d.maxNumBatchedTokens, d.context), g.block) + 1;
        for (std::int64_t j = 0; j < k; ++j) {
            const std::int64_t size = ceilDiv(tuples[i] - j, k); // layer_tuples[j::k]
            for (const auto& [page, n] : g.pages)
                slots[page] = std::max(slots[page], size);
            maxTuples = std::max(maxTuples, size);
        }
        kvGroups += k;
        need += k * perGroup;
    }
    std::int64_t perBlock = 0;
    for (const auto& [page, n] : slots)
        perBlock += page * n;
    pg.pageBytes = perBlock;
    pg.blockSize = block;
    pg.groups = kvGroups;
    pg.groupSize = T;
    pg.paddingLayers = padding;
    pg.blocks = pool / perBlock;
    pg.blocksPerRequest = need;
    pg.requestBytes = maxTuples * need * tupleBytes;
    pg.concurrency = static_cast<double>(pg.blocks) / static_cast<double>(need);
    pg.tokens = static_cast<std::int64_t>(pg.concurrency * static_cast<double>(d.context));
    pg.notes.push_back("DeepSeek-V4 packed layout: one block holds every cache's page (" +
                       withCommas(perBlock) + " B); " + std::to_string(kvGroups) +
                       " KV cache groups of " + std::to_string(T) + " layer tuples, " +
                       std::to_string(padding) + " padding tuple(s); MTP layers not counted");
    return true;
}

} // namespace

Paging vllmPaging(const std::vector<GroupCost>& costs, const Deployment& d, std::int64_t pool,
                  std::int64_t ctxRank, bool mla) {
    Paging pg;
    bool anyMamba = false;
    std::vector<Spec> specs = pagedSpecs(costs, anyMamba, pg);
    if (specs.empty())
        return pg;
    const bool dsv4 = std::all_of(specs.begin(), specs.end(), [](const Spec& s) {
        return s.c->group && s.c->group->deepseekV4;
    });
    if (dsv4 && dsv4Paging(costs, d, pool, ctxRank, pg))
        return pg;
    if (uniformType(specs) && !anyMamba) {
        uniformPaging(specs, d, pool, ctxRank, pg);
        return pg;
    }
    const std::int64_t block = anyMamba ? hybridBlock(specs, d.blockSize, mla, pg) : d.blockSize;
    const std::int64_t maxPage = unifyPages(specs, block, pg);
    hybridGroups(specs, d, pool, ctxRank, block, maxPage, pg);
    return pg;
}

} // namespace kvscope::lawdetail
