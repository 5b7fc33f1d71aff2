#include "core/features/compare.h"

#include "core/features/report_fields.h"
#include "core/format.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kvscope {

using nlohmann::json;

namespace {

/// "8", "1.55", "4.7": at most two decimals, trailing zeros dropped.
std::string factor(double x) {
    return fixedTrimmed(x, 2);
}

/// The compared quantity: its ratio key, the report field it reads, and the words.
struct Compared {
    const char* key;
    const char* field;
    const char* label;
    const char* more;
    const char* less;
};

const Compared kCompared[] = {
    {"bytes_per_token_per_rank", "cell_bytes_per_token_per_rank", "bytes per token per rank",
     "more", "fewer"},
    {"tokens", "tokens_capacity", "tokens held", "more", "fewer"},
    {"concurrency", "max_concurrency", "concurrent requests", "more", "fewer"},
    {"intensity", "intensity_flop_per_byte", "decode intensity", "higher", "lower"},
    {"attainable_fraction", "attainable_fraction_of_peak", "attainable fraction of peak", "higher",
     "lower"},
};

double fieldValue(const std::vector<ReportField>& fields, const char* key) {
    const ReportField* f = findField(fields, key);
    return f && f->value ? *f->value : 0.0;
}

CompareRatio make(const Compared& k, double a, double b) {
    CompareRatio r;
    r.key = k.key;
    r.label = k.label;
    r.field = k.field;
    r.a = a;
    r.b = b;
    const char* more = k.more;
    const char* less = k.less;
    r.ratio = a != 0 ? b / a : std::numeric_limits<double>::quiet_NaN();
    r.phrase = phraseRatio(r.ratio, r.label, more, less);
    return r;
}

Error sideError(const char* side, const Error& e) {
    return makeError(std::string(side) + "." + e.field, e.rule);
}

} // namespace

std::string phraseRatio(double ratio, const std::string& label, const std::string& moreWord,
                        const std::string& lessWord) {
    if (!std::isfinite(ratio))
        return "n/a: " + label + " is zero in A";
    if (ratio == 0)
        return "no " + label + " in B";
    if (sameRatio(ratio))
        return "same " + label;
    if (ratio > 1)
        return "×" + factor(ratio) + " " + moreWord + " " + label;
    return "×" + factor(1.0 / ratio) + " " + lessWord + " " + label;
}

bool sameRatio(double ratio) {
    return std::fabs(ratio - 1.0) <= 0.005;
}

std::string formatCompareValue(const CompareRatio& r, double value) {
    if (!std::isfinite(value))
        return "n/a";
    for (const ReportField& f : reportFields(Report{}))
        if (f.key == r.field) {
            ReportField shown = f;
            shown.value = value;
            return formatFieldHuman(shown);
        }
    return fixed(value, 2);
}

const CompareRatio* Comparison::ratio(const std::string& key) const {
    for (const auto& r : ratios)
        if (r.key == key)
            return &r;
    return nullptr;
}

Comparison compareReports(const Report& a, const Report& b) {
    Comparison c{a, b, {}, std::nullopt, {}};
    const auto fa = reportFields(a);
    const auto fb = reportFields(b);
    for (const Compared& k : kCompared)
        c.ratios.push_back(make(k, fieldValue(fa, k.field), fieldValue(fb, k.field)));
    const bool aMla = a.attention == AttentionKind::MLA;
    const bool bMla = b.attention == AttentionKind::MLA;
    if (aMla != bMla) {
        const Report& gqa = aMla ? b : a;
        const Report& mla = aMla ? a : b;
        if (gqa.cellBytesPerToken > 0 && mla.cellBytesPerToken > 0) {
            c.crossover = capacityCrossover(gqa.cellBytesPerToken, mla.cellBytesPerToken);
            const std::int64_t shards = std::min(gqa.tp, gqa.kvHeads);
            c.crossoverPhrase =
                "at a fixed pool the GQA side holds more tokens once min(TP, h_kv) passes " +
                humanBytes(static_cast<double>(gqa.cellBytesPerToken)) + " / " +
                humanBytes(static_cast<double>(mla.cellBytesPerToken)) + " = " +
                fixed(*c.crossover, 2) + "; here min(TP, h_kv) = " + std::to_string(shards) +
                (static_cast<double>(shards) > *c.crossover ? ", so MLA loses" : ", so MLA wins");
        }
    }
    return c;
}

Result<Comparison> compare(const Scenario& a, const Scenario& b) {
    auto ra = evaluate(a.model, a.gpu, a.deployment);
    if (!ra.ok())
        return sideError("a", ra.error());
    auto rb = evaluate(b.model, b.gpu, b.deployment);
    if (!rb.ok())
        return sideError("b", rb.error());
    return compareReports(ra.value(), rb.value());
}

namespace {

std::string describe(const Scenario& s, const Report& r) {
    std::string out =
        s.model.name + ", " + r.variant + ", " + s.gpu.id + ", TP=" + std::to_string(r.tp);
    if (r.dcp > 1)
        out += ", DCP=" + std::to_string(r.dcp);
    out += ", KV " + toString(r.kvDtype) + ", S=" + withCommas(r.context);
    return out;
}

} // namespace

std::string comparisonText(const Scenario& a, const Scenario& b, const Comparison& c) {
    std::ostringstream out;
    out << "A: " << describe(a, c.a) << "\n";
    out << "B: " << describe(b, c.b) << "\n\n";
    for (const auto& r : c.ratios) {
        out << "  " << r.label << ": " << formatCompareValue(r, r.a) << " → "
            << formatCompareValue(r, r.b) << "  (B/A "
            << (std::isfinite(r.ratio) ? fixed(r.ratio, 3) : std::string("n/a")) << ": " << r.phrase
            << ")\n";
    }
    if (c.crossover)
        out << "\n  crossover: " << c.crossoverPhrase << "\n";
    return out.str();
}

std::string comparisonJson(const Scenario& a, const Scenario& b, const Comparison& c) {
    json j = json::object();
    j["a"] = json::parse(jsonReport(a.model, a.gpu, c.a), nullptr, false);
    j["b"] = json::parse(jsonReport(b.model, b.gpu, c.b), nullptr, false);
    json ratios = json::object();
    for (const auto& r : c.ratios) {
        json e = json::object();
        e["a"] = r.a;
        e["b"] = r.b;
        e["ratio"] = std::isfinite(r.ratio) ? json(r.ratio) : json(nullptr);
        e["phrase"] = r.phrase;
        ratios[r.key] = e;
    }
    j["ratios"] = ratios;
    j["crossover"] = c.crossover ? json(*c.crossover) : json(nullptr);
    if (c.crossover)
        j["crossover_phrase"] = c.crossoverPhrase;
    return j.dump(2) + "\n";
}

} // namespace kvscope
