#include "ui/viewmodel.h"

#include "core/format.h"

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
    return kvscope::computeTpSeries(s.model, s.gpu, s.deployment, current, mlaReference,
                                    gqaReference);
}

std::string variantWithGroup(const std::string& label, std::int64_t qHeads, std::int64_t kvHeads) {
    if (label.rfind("GQA-", 0) != 0 || kvHeads <= 0 || qHeads % kvHeads != 0)
        return label;
    return label + " · g = " + std::to_string(qHeads / kvHeads);
}

std::string variantWithGroup(const Report& r) {
    return variantWithGroup(r.variant, r.qHeads, r.kvHeads);
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
