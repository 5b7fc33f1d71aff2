#include "core/features/story.h"

#include "core/features/export.h"
#include "core/jsonutil.h"
#include "core/model/presets.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>

namespace kvscope {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxStoryBytes = 4 * 1024 * 1024;
constexpr std::size_t kMaxSteps = 1000;

const std::vector<std::string>& ratioKeys() {
    static const std::vector<std::string> keys = {
        "bytes_per_token_per_rank", "tokens", "concurrency", "intensity", "attainable_fraction"};
    return keys;
}

bool isReportKey(const std::string& key) {
    static const std::vector<ReportNumber> all = reportNumbers(Report{});
    return std::any_of(all.begin(), all.end(), [&](const ReportNumber& n) { return n.key == key; });
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}

Status checkKeys(const json& o, const std::string& prefix, const std::vector<std::string>& known) {
    for (const auto& [key, value] : o.items()) {
        (void)value;
        if (!contains(known, key)) {
            std::string list;
            for (const auto& k : known)
                list += (list.empty() ? "" : ", ") + k;
            return makeError(prefix + key, "unknown field (known: " + list + ")");
        }
    }
    return Ok{};
}

Result<std::string> requiredString(const json& o, const std::string& key,
                                   const std::string& field) {
    auto it = o.find(key);
    if (it == o.end())
        return makeError(field, "missing");
    if (!it->is_string() || it->get<std::string>().empty())
        return makeError(field, "must be a non-empty string");
    return it->get<std::string>();
}

/// Parses a state object and resolves it (model, GPU, engine rules), so a broken story fails
/// at load time rather than on the step a presenter reaches in front of a room.
Result<Session> parseState(const json& o, const std::string& prefix) {
    bool latent = false;
    auto s = sessionFromJsonObject(o, prefix, {}, &latent);
    if (!s.ok())
        return s.error();
    auto sc = resolveSession(s.value());
    if (!sc.ok())
        return makeError(prefix + sc.error().field, sc.error().rule);
    if (latent && !sc->model.mla)
        return makeError(prefix + "h_kv", "\"latent\" needs an MLA model (kv_lora_rank); " +
                                              sc->model.name + " has none");
    return s;
}

Result<StoryKeyNumber> parseKeyNumber(const json& o, const std::string& prefix,
                                      const std::string& caption, bool hasCompare) {
    if (!o.is_object())
        return makeError(prefix.substr(0, prefix.size() - 1), "must be a JSON object");
    if (auto ok = checkKeys(o, prefix, {"field", "value", "tolerance", "text"}); !ok.ok())
        return ok.error();
    StoryKeyNumber k;
    auto field = requiredString(o, "field", prefix + "field");
    if (!field.ok())
        return field.error();
    k.field = field.value();
    const std::string& f = k.field;
    const bool needsCompare =
        f.rfind("compare.", 0) == 0 || f.rfind("ratio.", 0) == 0 || f == "crossover";
    if (needsCompare && !hasCompare)
        return makeError(prefix + "field", "'" + f + "' needs the step's compare_with state");
    bool known = false;
    if (f.rfind("compare.", 0) == 0)
        known = isReportKey(f.substr(8));
    else if (f.rfind("ratio.", 0) == 0)
        known = contains(ratioKeys(), f.substr(6));
    else
        known = f == "crossover" || isReportKey(f);
    if (!known)
        return makeError(prefix + "field", "unknown number '" + f +
                                               "' (a report key such as max_concurrency, "
                                               "compare.<key>, ratio.<key> or crossover)");
    auto v = o.find("value");
    if (v == o.end())
        return makeError(prefix + "value", "missing");
    if (!v->is_number() || !std::isfinite(v->get<double>()))
        return makeError(prefix + "value", "must be a number");
    k.value = v->get<double>();
    if (auto t = o.find("tolerance"); t != o.end()) {
        if (!t->is_number() || !(t->get<double>() >= 0))
            return makeError(prefix + "tolerance", "must be a non-negative number");
        k.tolerance = t->get<double>();
    } else if (!v->is_number_integer()) {
        // A decimal as written: half a unit in its last printed place, at least 0.5%.
        k.tolerance = std::max(std::fabs(k.value) * 0.005, 0.005);
    }
    if (auto t = o.find("text"); t != o.end()) {
        if (!t->is_string() || t->get<std::string>().empty())
            return makeError(prefix + "text", "must be a non-empty string");
        k.text = t->get<std::string>();
        if (caption.find(k.text) == std::string::npos)
            return makeError(prefix + "text", "'" + k.text + "' does not occur in the caption");
    }
    return k;
}

Result<StoryStep> parseStep(const json& o, const std::string& prefix) {
    if (!o.is_object())
        return makeError(prefix.substr(0, prefix.size() - 1), "must be a JSON object");
    if (auto ok = checkKeys(
            o, prefix,
            {"title", "caption", "notes", "state", "compare_with", "highlight", "key_numbers"});
        !ok.ok())
        return ok.error();
    StoryStep step;
    auto title = requiredString(o, "title", prefix + "title");
    if (!title.ok())
        return title.error();
    step.title = title.value();
    auto caption = requiredString(o, "caption", prefix + "caption");
    if (!caption.ok())
        return caption.error();
    step.caption = caption.value();
    if (auto n = o.find("notes"); n != o.end()) {
        if (!n->is_string())
            return makeError(prefix + "notes", "must be a string");
        step.notes = n->get<std::string>();
    }
    auto st = o.find("state");
    if (st == o.end())
        return makeError(prefix + "state", "missing");
    if (!st->is_object())
        return makeError(prefix + "state", "must be a JSON object");
    auto state = parseState(*st, prefix);
    if (!state.ok())
        return state.error();
    step.state = state.value();
    if (auto c = o.find("compare_with"); c != o.end()) {
        if (!c->is_object())
            return makeError(prefix + "compare_with", "must be a JSON object");
        auto cmp = parseState(*c, prefix + "compare_with.");
        if (!cmp.ok())
            return cmp.error();
        step.compareWith = cmp.value();
    }
    if (auto h = o.find("highlight"); h != o.end()) {
        if (!h->is_object())
            return makeError(prefix + "highlight", "must be a JSON object {view, number}");
        if (auto ok = checkKeys(*h, prefix + "highlight.", {"view", "number"}); !ok.ok())
            return ok.error();
        if (h->contains("view")) {
            auto v = requiredString(*h, "view", prefix + "highlight.view");
            if (!v.ok())
                return v.error();
            if (std::none_of(std::begin(kStoryViews), std::end(kStoryViews),
                             [&](const char* k) { return v.value() == k; })) {
                std::string list;
                for (const char* k : kStoryViews)
                    list += (list.empty() ? "" : ", ") + std::string(k);
                return makeError(prefix + "highlight.view", "must be one of " + list);
            }
            step.highlight.view = v.value();
        }
        if (h->contains("number")) {
            auto v = requiredString(*h, "number", prefix + "highlight.number");
            if (!v.ok())
                return v.error();
            if (!isReportKey(v.value()))
                return makeError(prefix + "highlight.number", "unknown number '" + v.value() + "'");
            step.highlight.number = v.value();
        }
    }
    if (auto k = o.find("key_numbers"); k != o.end()) {
        if (!k->is_array())
            return makeError(prefix + "key_numbers", "must be an array");
        for (std::size_t i = 0; i < k->size(); ++i) {
            auto kn = parseKeyNumber((*k)[i], prefix + "key_numbers[" + std::to_string(i) + "].",
                                     step.caption, step.compareWith.has_value());
            if (!kn.ok())
                return kn.error();
            step.keyNumbers.push_back(kn.value());
        }
    }
    return step;
}

} // namespace

Result<Story> parseStory(std::string_view text) {
    auto parsed = parseJsonBounded(text, "story", kMaxStoryBytes);
    if (!parsed.ok())
        return parsed.error();
    const json& root = parsed.value();
    if (!root.is_object())
        return makeError("story", "must be a JSON object with \"title\" and \"steps\"");
    if (auto ok = checkKeys(root, "", {"title", "description", "steps"}); !ok.ok())
        return ok.error();
    Story story;
    auto title = requiredString(root, "title", "title");
    if (!title.ok())
        return title.error();
    story.title = title.value();
    if (auto d = root.find("description"); d != root.end()) {
        if (!d->is_string())
            return makeError("description", "must be a string");
        story.description = d->get<std::string>();
    }
    auto steps = root.find("steps");
    if (steps == root.end())
        return makeError("steps", "missing");
    if (!steps->is_array() || steps->empty())
        return makeError("steps", "must be a non-empty array of steps");
    if (steps->size() > kMaxSteps)
        return makeError("steps", "at most " + std::to_string(kMaxSteps) + " steps");
    for (std::size_t i = 0; i < steps->size(); ++i) {
        auto step = parseStep((*steps)[i], "steps[" + std::to_string(i) + "].");
        if (!step.ok())
            return step.error();
        story.steps.push_back(step.value());
    }
    return story;
}

Result<Story> loadStoryFile(const std::string& path) {
    auto text = readFileBounded(path, "story", kMaxStoryBytes);
    if (!text.ok())
        return text.error();
    return parseStory(text.value());
}

Result<Story> loadBuiltinStory(const std::string& name) {
    const std::string text = embeddedResource("stories/" + name + ".json");
    if (text.empty())
        return makeError("story", "no bundled story named '" + name + "'");
    return parseStory(text);
}

std::vector<std::string> builtinStories() {
    std::vector<std::string> names;
    for (const auto& path : embeddedResourcePaths("stories/")) {
        std::string n = path.substr(path.rfind('/') + 1);
        if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0)
            names.push_back(n.substr(0, n.size() - 5));
    }
    return names;
}

Result<EvaluatedStep> evaluateStep(const StoryStep& step) {
    auto sc = resolveSession(step.state);
    if (!sc.ok())
        return sc.error();
    auto report = evaluate(sc->model, sc->gpu, sc->deployment);
    if (!report.ok())
        return report.error();
    EvaluatedStep out{sc.value(), report.value(), std::nullopt, std::nullopt};
    if (step.compareWith) {
        auto other = resolveSession(*step.compareWith);
        if (!other.ok())
            return makeError("compare_with." + other.error().field, other.error().rule);
        auto c = compare(other.value(), out.scenario);
        if (!c.ok())
            return makeError(c.error().field.rfind("a.", 0) == 0
                                 ? "compare_with." + c.error().field.substr(2)
                                 : c.error().field,
                             c.error().rule);
        out.compareScenario = other.value();
        out.comparison = c.value();
    }
    return out;
}

Result<double> keyNumberValue(const EvaluatedStep& step, const std::string& field) {
    auto missingCompare = [&] { return makeError(field, "needs the step's compare_with state"); };
    if (field == "crossover") {
        if (!step.comparison)
            return missingCompare();
        if (!step.comparison->crossover)
            return makeError(field, "only defined between an MLA and a GQA-family cache");
        return *step.comparison->crossover;
    }
    if (field.rfind("ratio.", 0) == 0) {
        if (!step.comparison)
            return missingCompare();
        if (const CompareRatio* r = step.comparison->ratio(field.substr(6)))
            return r->ratio;
        return makeError(field, "unknown ratio");
    }
    if (field.rfind("compare.", 0) == 0) {
        if (!step.comparison)
            return missingCompare();
        if (auto v = reportNumber(step.comparison->a, field.substr(8)))
            return *v;
        return makeError(field, "unknown number");
    }
    if (auto v = reportNumber(step.report, field))
        return *v;
    return makeError(field, "unknown number");
}

Status verifyStory(const Story& story) {
    for (std::size_t i = 0; i < story.steps.size(); ++i) {
        const std::string prefix = "steps[" + std::to_string(i) + "]";
        auto ev = evaluateStep(story.steps[i]);
        if (!ev.ok())
            return makeError(prefix + "." + ev.error().field, ev.error().rule);
        for (std::size_t k = 0; k < story.steps[i].keyNumbers.size(); ++k) {
            const StoryKeyNumber& kn = story.steps[i].keyNumbers[k];
            const std::string where = prefix + ".key_numbers[" + std::to_string(k) + "]";
            auto v = keyNumberValue(ev.value(), kn.field);
            if (!v.ok())
                return makeError(where, v.error().message());
            if (!(std::fabs(v.value() - kn.value) <= kn.tolerance))
                return makeError(where, kn.field + ": the story says " +
                                            nlohmann::json(kn.value).dump() + ", core computes " +
                                            nlohmann::json(v.value()).dump());
            if (!kn.text.empty() && story.steps[i].caption.find(kn.text) == std::string::npos)
                return makeError(where + ".text", "'" + kn.text + "' not in the caption");
        }
    }
    return Ok{};
}

bool StoryCursor::goTo(std::size_t index) {
    if (count_ == 0)
        return false;
    const std::size_t clamped = std::min(index, count_ - 1);
    const bool changed = clamped != index_;
    index_ = clamped;
    return changed;
}

bool StoryCursor::next() {
    return atLast() ? false : goTo(index_ + 1);
}
bool StoryCursor::prev() {
    return index_ == 0 ? false : goTo(index_ - 1);
}
bool StoryCursor::first() {
    return goTo(0);
}
bool StoryCursor::last() {
    return count_ == 0 ? false : goTo(count_ - 1);
}

} // namespace kvscope
