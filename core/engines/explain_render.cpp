// explain-log's output: one log term by term (text or JSON), or a folder of logs as one table
// with the median and worst token error.
#include "core/engines/explain_log.h"
#include "core/format.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace kvscope {

using nlohmann::json;

namespace {

constexpr double kGiB = 1073741824.0;

std::string show(const ExplainTerm& t, double v) {
    if (t.unit == "B")
        return std::fabs(v) >= kGiB / 10 ? fixed(v / kGiB, 2) + " GiB"
                                         : withCommas(std::llround(v)) + " B";
    if (t.unit == "tokens")
        return withCommas(std::llround(v));
    return fixed(v, 2) + "x";
}

std::string percent(double v) {
    std::string out = v >= 0 ? "+" : ""; // appended: see schema_codecs.cpp's quoted()
    out += fixed(100.0 * v, 1);
    out += "%";
    return out;
}

const ExplainTerm* findTerm(const LogExplanation& e, const std::string& key) {
    for (const auto& t : e.terms)
        if (t.key == key)
            return &t;
    return nullptr;
}

std::string joined(const std::vector<std::string>& v, const std::string& sep) {
    std::string out;
    for (const auto& s : v)
        out += (out.empty() ? "" : sep) + s;
    return out;
}

} // namespace

std::string explanationText(const LogExplanation& e) {
    std::ostringstream out;
    const Deployment& d = e.scenario.deployment;
    out << d.engine.text() << " log: " << e.log.model << " → " << e.modelRef << " on "
        << e.scenario.gpu.name << ", TP=" << d.tp;
    if (d.pp > 1)
        out << ", PP=" << d.pp;
    if (d.dcp > 1)
        out << ", DCP=" << d.dcp;
    out << ", util " << fixed(e.report.pool.util, 2) << ", KV " << toString(e.report.kvDtype)
        << ", S=" << withCommas(d.context) << "\n\n";
    out << "  term                                                kvscope          log\n";
    for (const auto& t : e.terms) {
        char line[512];
        const std::string logged =
            t.logged ? show(t, *t.logged) + (t.inferred ? " (implied)" : "") : std::string("—");
        std::snprintf(line, sizeof line, "  %-50s %-16s %s", t.label.c_str(),
                      show(t, t.predicted).c_str(), logged.c_str());
        out << line << "\n      " << t.explanation << "\n";
    }
    out << "\n" << e.summary << "\n";
    for (const auto& m : e.marks)
        out << "mark: " << m << "\n";
    for (const auto& n : e.notes)
        out << "note: " << n << "\n";
    return out.str();
}

std::string explanationJson(const LogExplanation& e) {
    json j = json::object();
    const Deployment& d = e.scenario.deployment;
    j["engine"] = toString(e.log.engine);
    j["engine_spec"] = {{"name", toString(d.engine.name)}, {"version", d.engine.version.text()}};
    j["model_logged"] = e.log.model;
    j["model"] = e.modelRef;
    j["gpu"] = e.scenario.gpu.id;
    j["tp"] = d.tp;
    j["pp"] = d.pp;
    j["dcp"] = d.dcp;
    j["util"] = e.report.pool.util;
    j["context"] = d.context;
    j["kv_dtype"] = toString(e.report.kvDtype);
    json terms = json::array();
    for (const auto& t : e.terms) {
        json x = json::object();
        x["key"] = t.key;
        x["label"] = t.label;
        x["unit"] = t.unit;
        x["predicted"] = t.predicted;
        x["logged"] = t.logged ? json(*t.logged) : json(nullptr);
        x["logged_inferred"] = t.inferred;
        x["difference"] = t.logged ? json(t.predicted - *t.logged) : json(nullptr);
        x["explanation"] = t.explanation;
        terms.push_back(x);
    }
    j["terms"] = terms;
    j["tokens_error"] = e.tokensError ? json(*e.tokensError) : json(nullptr);
    j["main_term"] = e.mainTerm;
    j["small_pool"] = e.smallPool;
    j["marks"] = e.marks;
    j["summary"] = e.summary;
    j["notes"] = e.notes;
    j["read"] = e.log.readLines;
    return j.dump(2) + "\n";
}

std::string fleetText(const std::vector<FleetRow>& rows) {
    std::ostringstream out;
    char line[768];
    std::snprintf(line, sizeof line, "%-58s %-14s %11s %11s %8s  %s\n", "log", "engine", "logged",
                  "kvscope", "error", "largest term / why not");
    out << line;
    for (const auto& r : rows) {
        std::string file = r.file.size() > 58 ? "…" + r.file.substr(r.file.size() - 57) : r.file;
        if (!r.explanation.ok()) {
            std::snprintf(line, sizeof line, "%-58s %-14s %11s %11s %8s  %s\n", file.c_str(), "-",
                          "-", "-", "-", r.explanation.error().message().c_str());
            out << line;
            continue;
        }
        const LogExplanation& e = r.explanation.value();
        const ExplainTerm* t = findTerm(e, "tokens");
        const std::string logged = t && t->logged ? withCommas(std::llround(*t->logged)) : "-";
        const std::string pred = t ? withCommas(std::llround(t->predicted)) : "-";
        const std::string err = e.tokensError ? percent(*e.tokensError) : "-";
        std::string why = e.mainTerm;
        if (e.smallPool)
            why = "small pool (<10% of budget); " + why;
        if (!e.marks.empty())
            why += " [" + joined(e.marks, "; ") + "]";
        std::snprintf(line, sizeof line, "%-58s %-14s %11s %11s %8s  %s\n", file.c_str(),
                      e.scenario.deployment.engine.text().c_str(), logged.c_str(), pred.c_str(),
                      err.c_str(), why.c_str());
        out << line;
    }
    const FleetStats s = fleetStats(rows);
    const FleetStats dense = fleetStats(rows, true);
    out << "\n"
        << s.explained << " explained, " << s.failed << " not (listed above), " << s.smallPools
        << " small pool(s) apart\n";
    out << "median |error| " << fixed(100.0 * s.medianAbsError, 2) << "%, worst "
        << fixed(100.0 * s.worstAbsError, 2) << "%" << (s.worstFile.empty() ? "" : " (")
        << s.worstFile << (s.worstFile.empty() ? "" : ")") << "\n";
    out << "without the hybrid-marked logs: median |error| "
        << fixed(100.0 * dense.medianAbsError, 2) << "%, worst "
        << fixed(100.0 * dense.worstAbsError, 2) << "%"
        << (dense.worstFile.empty() ? "" : " (" + dense.worstFile + ")") << "\n";
    return out.str();
}

std::string fleetJson(const std::vector<FleetRow>& rows) {
    json list = json::array();
    for (const auto& r : rows) {
        json x = json::object();
        x["file"] = r.file;
        if (!r.explanation.ok()) {
            x["error"] = r.explanation.error().message();
            list.push_back(x);
            continue;
        }
        const LogExplanation& e = r.explanation.value();
        const ExplainTerm* t = findTerm(e, "tokens");
        x["engine"] = e.scenario.deployment.engine.text();
        x["model"] = e.modelRef;
        x["logged_tokens"] = t && t->logged ? json(*t->logged) : json(nullptr);
        x["predicted_tokens"] = t ? json(t->predicted) : json(nullptr);
        x["tokens_error"] = e.tokensError ? json(*e.tokensError) : json(nullptr);
        x["main_term"] = e.mainTerm;
        x["small_pool"] = e.smallPool;
        x["marks"] = e.marks;
        json terms = json::object();
        for (const auto& term : e.terms)
            if (term.unit == "B")
                terms[term.key] = {{"predicted", term.predicted},
                                   {"logged", term.logged ? json(*term.logged) : json(nullptr)}};
        x["terms"] = terms;
        list.push_back(x);
    }
    const FleetStats s = fleetStats(rows);
    const FleetStats dense = fleetStats(rows, true);
    json j = {{"logs", list},
              {"dense_median_abs_error", dense.medianAbsError},
              {"dense_worst_abs_error", dense.worstAbsError},
              {"explained", s.explained},
              {"failed", s.failed},
              {"small_pools", s.smallPools},
              {"median_abs_error", s.medianAbsError},
              {"worst_abs_error", s.worstAbsError},
              {"worst_file", s.worstFile}};
    return j.dump(2) + "\n";
}

} // namespace kvscope
