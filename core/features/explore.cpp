// The explorer's choices and the §6 TP comparison. Every number comes from evaluate and the
// engines' validation (core/law/law.h); this file only decides what to evaluate.
#include "core/features/explore.h"

#include "core/format.h"
#include "core/model/presets.h"

#include <algorithm>

namespace kvscope {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TpSeries evaluateSeries(const ModelSpec& m, const GpuSpec& gpu, Deployment d, std::int64_t maxTp,
                        const std::string& label) {
    TpSeries s;
    s.label = label;
    s.mla = m.mla && !d.kvHeads;
    s.kvHeads = s.mla ? 0 : d.kvHeads.value_or(m.kvHeads.value);
    d.dcp = 1;
    for (std::int64_t tp : validTpSizes(m, s.mla ? 1 : s.kvHeads, maxTp)) {
        d.tp = tp;
        auto r = evaluate(m, gpu, d);
        if (!r.ok())
            continue;
        s.cellBytesPerToken = r->cellBytesPerToken;
        s.points.push_back(TpPoint{tp, r->tokensCapacity, r->concurrency, r->intensityFlopPerByte,
                                   r->kvReplicated});
    }
    return s;
}

// "Llama-3-70B GQA-8", "DeepSeek-V3 MLA latent": the preset title without its parenthetical.
std::string seriesLabel(const ModelSpec& m, std::optional<std::int64_t> kv) {
    std::string title = modelDisplayName(m.name, m);
    if (const auto paren = title.find(" ("); paren != std::string::npos)
        title.resize(paren);
    return title + " " + kvChoiceLabel(m, kv);
}

// The series the current one is compared with: an MLA model's latent against the GQA
// reference (or its own GQA what-if, h_kv = 8 where h allows) and back; a GQA-family model
// against the MLA reference's latent. Each starts at TP=1 / DCP=1 and falls back to the model's
// own KV dtype where the current one does not apply.
std::optional<TpSeries> counterpartSeries(const ModelSpec& m, const GpuSpec& gpu,
                                          const Deployment& base, std::int64_t maxTp,
                                          const ModelSpec* mlaReference,
                                          const ModelSpec* gqaReference) {
    Deployment d = base;
    d.tp = 1;
    d.dcp = 1;
    if (m.mla && !base.kvHeads && gqaReference && !gqaReference->mla) {
        d.kvHeads.reset();
        if (d.kvDtype == KvDtype::FP8DsMla)
            d.kvDtype = KvDtype::FP8;
        return evaluateSeries(*gqaReference, gpu, d, maxTp,
                              seriesLabel(*gqaReference, std::nullopt));
    }
    if (m.mla) {
        if (base.kvHeads) {
            d.kvHeads.reset();
        } else {
            const auto kvs = validKvHeadCounts(m);
            std::int64_t pick = kvs.empty() ? 1 : kvs[kvs.size() / 2];
            if (std::find(kvs.begin(), kvs.end(), 8) != kvs.end())
                pick = 8;
            d.kvHeads = pick;
        }
        if (!evaluate(m, gpu, d).ok())
            d.kvDtype = KvDtype::Auto;
        return evaluateSeries(m, gpu, d, maxTp, seriesLabel(m, d.kvHeads));
    }
    if (!mlaReference)
        return std::nullopt;
    d.kvHeads.reset();
    if (!evaluate(*mlaReference, gpu, d).ok())
        d.kvDtype = KvDtype::Auto;
    return evaluateSeries(*mlaReference, gpu, d, maxTp, seriesLabel(*mlaReference, std::nullopt));
}

} // namespace

std::optional<CrossoverReading> readCrossover(const TpSeries& gqa, const TpSeries& mla) {
    if (gqa.mla || !mla.mla || gqa.cellBytesPerToken <= 0 || mla.cellBytesPerToken <= 0)
        return std::nullopt;
    CrossoverReading c;
    c.ratio = capacityCrossover(gqa.cellBytesPerToken, mla.cellBytesPerToken);
    // The variant alone ("MQA", "GQA-8"): a plot's title has no room for the model's name,
    // which its legend gives.
    const std::string variant = gqa.label.substr(gqa.label.rfind(' ') + 1);
    if (c.ratio <= 1.0) {
        c.text = variant + " holds more than MLA at every TP";
    } else if (c.ratio > static_cast<double>(gqa.kvHeads)) {
        c.text =
            "MLA holds more at every TP (" + variant + " needs h_kv > " + fixed(c.ratio, 2) + ")";
    } else {
        c.crossoverTp = c.ratio;
        c.text = "crossover at TP = " + fixed(c.ratio, 2);
    }
    return c;
}

TpData computeTpSeries(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d,
                       const Report& current, const ModelSpec* mlaReference,
                       const ModelSpec* gqaReference) {
    TpData out;
    out.currentTp = current.tp;
    out.ridgeFlopPerByte = current.ridgeFlopPerByte;
    // Fix the pool per rank so only the cache differs between the two series (chapter §6).
    out.poolGiBPerRank = current.pool.poolBytes > 0
                             ? static_cast<double>(current.pool.poolBytes) / kGiB
                             : kComparisonPoolGiB;
    Deployment base = d;
    base.poolGiB = out.poolGiBPerRank;
    const std::int64_t maxTp = std::max<std::int64_t>(64, current.tp);
    out.primary = evaluateSeries(m, gpu, base, maxTp, seriesLabel(m, d.kvHeads));
    out.counterpart = counterpartSeries(m, gpu, base, maxTp, mlaReference, gqaReference);
    if (out.counterpart && !out.primary.points.empty() && !out.counterpart->points.empty()) {
        const TpSeries& gqa = out.primary.mla ? *out.counterpart : out.primary;
        const TpSeries& mla = out.primary.mla ? out.primary : *out.counterpart;
        if (auto c = readCrossover(gqa, mla)) {
            out.crossoverTp = c->crossoverTp;
            out.crossoverText = c->text;
        }
    }
    return out;
}

Deployment fitDeployment(const ModelSpec& m, const GpuSpec& gpu, Deployment d) {
    if (d.kvHeads) {
        const auto kvs = validKvHeadCounts(m);
        if (std::find(kvs.begin(), kvs.end(), *d.kvHeads) == kvs.end() ||
            (!m.mla && *d.kvHeads == m.kvHeads.value))
            d.kvHeads.reset();
    }
    if (validate(m, gpu, d).ok())
        return d;
    if (d.kvDtype == KvDtype::FP8DsMla && !m.mla)
        d.kvDtype = KvDtype::Auto;
    d.dcp = 1;
    if (validate(m, gpu, d).ok())
        return d;
    // Largest valid TP not above the requested one.
    std::int64_t best = 1;
    for (auto tp : tpChoices(m, d.kvHeads))
        if (tp <= d.tp)
            best = tp;
    d.tp = best;
    if (validate(m, gpu, d).ok())
        return d;
    d.tp = 1;
    d.kvDtype = KvDtype::Auto;
    return d;
}

std::string modelDisplayName(const std::string& ref, const ModelSpec& m) {
    for (const auto& p : modelPresets())
        if (p.id == ref || p.id == m.name)
            return p.title;
    return m.name;
}

std::vector<std::optional<std::int64_t>> kvHeadChoices(const ModelSpec& m) {
    std::vector<std::optional<std::int64_t>> out;
    for (auto kv : validKvHeadCounts(m))
        out.push_back(kv);
    if (m.mla)
        out.push_back(std::nullopt); // after MQA: the chapter's MHA → MQA → GQA → MLA
    return out;
}

std::string kvChoiceLabel(const ModelSpec& m, std::optional<std::int64_t> kv) {
    if (!kv)
        return m.mla ? "MLA latent" : variantLabel(m, m.kvHeads.value);
    return variantLabel(m, *kv);
}

std::vector<std::int64_t> tpChoices(const ModelSpec& m, std::optional<std::int64_t> kv) {
    const std::int64_t k = kv ? *kv : (m.mla ? 1 : m.kvHeads.value);
    auto v = validTpSizes(m, k, 128);
    if (v.empty())
        v.push_back(1);
    return v;
}

std::vector<std::int64_t> dcpChoices(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d) {
    std::vector<std::int64_t> out{1};
    for (std::int64_t dcp = 2; dcp <= std::max<std::int64_t>(d.tp, 1); dcp *= 2) {
        Deployment t = d;
        t.dcp = dcp;
        if (validate(m, gpu, t).ok())
            out.push_back(dcp);
    }
    return out;
}

std::vector<KvDtype> kvDtypeChoices(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d) {
    std::vector<KvDtype> out;
    for (const KvDtypeInfo& row : kvDtypeTable()) {
        Deployment t = d;
        t.kvDtype = row.dtype;
        if (row.dtype == d.kvDtype || validate(m, gpu, t).ok())
            out.push_back(row.dtype);
    }
    return out;
}

} // namespace kvscope
