#include "ui/viewmodel.h"

#include "core/format.h"
#include "core/model/presets.h"

#include <algorithm>
#include <cmath>

namespace kvscope::ui {

namespace {

// Evaluates `d`; when the engines refuse it, retries with DCP=1, then at TP=1 as well, so a
// variant still gets a point. `note` says which fallback was used.
Result<Report> evaluateWithFallback(const ModelSpec& m, const GpuSpec& gpu, Deployment d,
                                    std::string* note) {
    auto r = evaluate(m, gpu, d);
    if (r.ok())
        return r;
    if (d.dcp != 1) {
        d.dcp = 1;
        r = evaluate(m, gpu, d);
        if (r.ok()) {
            *note = "DCP=1";
            return r;
        }
    }
    if (d.tp != 1) {
        d.tp = 1;
        d.dcp = 1;
        r = evaluate(m, gpu, d);
        if (r.ok())
            *note = "TP=1";
    }
    return r;
}

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

} // namespace

RooflineData computeRoofline(const AppState& s, const Report& current) {
    RooflineData out;
    out.bandwidthBytesPerS = s.gpu.bandwidthBytesPerS;
    out.peakBf16FlopPerS = s.gpu.peakBf16FlopPerS;
    out.peakFp32FlopPerS = s.gpu.peakFp32FlopPerS;
    out.ridgeFlopPerByte =
        current.ridgeFlopPerByte > 0 ? current.ridgeFlopPerByte : s.gpu.ridgeBf16();
    out.gpuName = s.gpu.name.empty() ? s.gpu.id : s.gpu.name;
    std::optional<std::int64_t> effectiveKv = s.deployment.kvHeads;
    if (!effectiveKv && !s.model.mla)
        effectiveKv = s.model.kvHeads.value;
    for (const auto& kv : kvHeadChoices(s.model)) {
        Deployment d = s.deployment;
        d.kvHeads = kv;
        VariantPoint p;
        auto r = evaluateWithFallback(s.model, s.gpu, d, &p.note);
        if (!r.ok())
            continue;
        p.label = kvChoiceLabel(s.model, kv);
        p.intensityFlopPerByte = r->intensityFlopPerByte;
        p.attainableFlopPerS = r->attainableFlopPerS;
        p.fractionOfPeak = r->attainableFractionOfPeak;
        p.mla = r->attention == AttentionKind::MLA;
        p.longLabel = variantWithGroup(p.label, s.model.qHeads.value,
                                       kv.value_or(p.mla ? 0 : s.model.kvHeads.value));
        p.current = kv == effectiveKv;
        if (p.current) {
            // The highlighted point is the report the numbers panel shows, not a re-evaluation.
            p.intensityFlopPerByte = current.intensityFlopPerByte;
            p.attainableFlopPerS = current.attainableFlopPerS;
            p.fractionOfPeak = current.attainableFractionOfPeak;
            p.note.clear();
        }
        out.variants.push_back(std::move(p));
    }
    return out;
}

TpData computeTpSeries(const AppState& s, const Report& current, const ModelSpec* mlaReference,
                       const ModelSpec* gqaReference) {
    TpData out;
    out.currentTp = current.tp;
    out.ridgeFlopPerByte = current.ridgeFlopPerByte;
    // Fix the pool per rank so only the cache differs between the two series (chapter §6).
    const double gib = 1024.0 * 1024.0 * 1024.0;
    out.poolGiBPerRank =
        current.pool.poolBytes > 0 ? static_cast<double>(current.pool.poolBytes) / gib : 40.0;
    Deployment base = s.deployment;
    base.poolGiB = out.poolGiBPerRank;
    const std::int64_t maxTp = std::max<std::int64_t>(64, current.tp);

    out.primary =
        evaluateSeries(s.model, s.gpu, base, maxTp, seriesLabel(s.model, s.deployment.kvHeads));

    // The counterpart: an MLA model against its GQA what-if (h_kv = 8 when h allows) and back;
    // a GQA-family model against the bundled MLA reference's latent.
    if (s.model.mla && !s.deployment.kvHeads && gqaReference && !gqaReference->mla) {
        Deployment d = base;
        d.kvHeads.reset();
        d.tp = 1;
        d.dcp = 1;
        if (d.kvDtype == KvDtype::FP8DsMla)
            d.kvDtype = KvDtype::FP8;
        out.counterpart = evaluateSeries(*gqaReference, s.gpu, d, maxTp,
                                         seriesLabel(*gqaReference, std::nullopt));
    } else if (s.model.mla) {
        Deployment d = base;
        if (s.deployment.kvHeads) {
            d.kvHeads.reset();
        } else {
            const auto kvs = validKvHeadCounts(s.model);
            std::int64_t pick = kvs.empty() ? 1 : kvs[kvs.size() / 2];
            if (std::find(kvs.begin(), kvs.end(), 8) != kvs.end())
                pick = 8;
            d.kvHeads = pick;
        }
        d.tp = 1;
        d.dcp = 1;
        if (!evaluate(s.model, s.gpu, d).ok())
            d.kvDtype = KvDtype::Auto;
        out.counterpart = evaluateSeries(s.model, s.gpu, d, maxTp, seriesLabel(s.model, d.kvHeads));
    } else if (mlaReference) {
        Deployment d = base;
        d.kvHeads.reset();
        d.tp = 1;
        d.dcp = 1;
        if (!evaluate(*mlaReference, s.gpu, d).ok())
            d.kvDtype = KvDtype::Auto;
        out.counterpart = evaluateSeries(*mlaReference, s.gpu, d, maxTp,
                                         seriesLabel(*mlaReference, std::nullopt));
    }

    if (out.counterpart && !out.primary.points.empty() && !out.counterpart->points.empty()) {
        const TpSeries& gqa = out.primary.mla ? *out.counterpart : out.primary;
        const TpSeries& mla = out.primary.mla ? out.primary : *out.counterpart;
        if (!gqa.mla && mla.mla && gqa.cellBytesPerToken > 0 && mla.cellBytesPerToken > 0) {
            const double x = capacityCrossover(gqa.cellBytesPerToken, mla.cellBytesPerToken);
            // The variant alone ("MQA", "GQA-8"): the plot's title has no room for the model's
            // name, which its legend gives.
            const std::string variant = gqa.label.substr(gqa.label.rfind(' ') + 1);
            if (x <= 1.0) {
                out.crossoverText = variant + " holds more than MLA at every TP";
            } else if (x > static_cast<double>(gqa.kvHeads)) {
                out.crossoverText =
                    "MLA holds more at every TP (" + variant + " needs h_kv > " + fixed(x, 2) + ")";
            } else {
                out.crossoverTp = x;
                out.crossoverText = "crossover at TP = " + fixed(x, 2);
            }
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
    const auto tps = tpChoices(m, d.kvHeads);
    std::int64_t best = 1;
    for (auto tp : tps)
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

std::string variantWithGroup(const std::string& label, std::int64_t qHeads, std::int64_t kvHeads) {
    if (label.rfind("GQA-", 0) != 0 || kvHeads <= 0 || qHeads % kvHeads != 0)
        return label;
    return label + " · g = " + std::to_string(qHeads / kvHeads);
}

std::string variantWithGroup(const Report& r) {
    return variantWithGroup(r.variant, r.qHeads, r.kvHeads);
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

const std::vector<std::int64_t>& contextChoices() {
    static const std::vector<std::int64_t> v = [] {
        std::vector<std::int64_t> c;
        for (std::int64_t p = 1024; p <= (1 << 20); p *= 2) {
            c.push_back(p);
            if (p < (1 << 20))
                c.push_back(p + p / 2);
        }
        return c;
    }();
    return v;
}

const std::vector<std::int64_t>& batchChoices() {
    static const std::vector<std::int64_t> v = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
    return v;
}

std::vector<KvDtype> kvDtypeChoices(const ModelSpec& m, const GpuSpec& gpu, const Deployment& d) {
    std::vector<KvDtype> out;
    for (const KvDtypeInfo& row : kvDtypeTable()) {
        const KvDtype k = row.dtype;
        Deployment t = d;
        t.kvDtype = k;
        if (k == d.kvDtype || validate(m, gpu, t).ok())
            out.push_back(k);
    }
    return out;
}

int nearestIndex(const std::vector<std::int64_t>& values, std::int64_t v) {
    int best = 0;
    double bestDist = 1e300;
    for (int i = 0; i < static_cast<int>(values.size()); ++i) {
        const double dist =
            std::abs(std::log(static_cast<double>(std::max<std::int64_t>(1, values[i]))) -
                     std::log(static_cast<double>(std::max<std::int64_t>(1, v))));
        if (dist < bestDist) {
            bestDist = dist;
            best = i;
        }
    }
    return best;
}

} // namespace kvscope::ui
