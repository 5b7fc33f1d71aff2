// The schema's codecs: locale-independent number text, and the row builders and check/JSON
// hooks that every row of a kind shares (schema.cpp lists the rows).
#include "core/features/schema_codecs.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

namespace kvscope::schema_detail {

using nlohmann::json;

std::string quoted(std::string_view s) {
    // Appended, not "'" + std::string(s): GCC 12 at -O3 warns -Wrestrict on that (bug 105329).
    std::string out = "'";
    out.append(s).push_back('\'');
    return out;
}

std::optional<std::int64_t> parseInteger(std::string_view text) {
    std::int64_t out = 0;
    const char* b = text.data();
    const char* e = b + text.size();
    auto [p, ec] = std::from_chars(b, e, out);
    if (text.empty() || ec != std::errc() || p != e)
        return std::nullopt;
    return out;
}

/// Locale-independent (the GUI runs under the user's LC_NUMERIC, where strtod may want "0,85").
std::optional<double> parseNumber(std::string_view text) {
    double v = 0;
    const char* b = text.data();
    const char* e = b + text.size();
    auto [p, ec] = std::from_chars(b, e, v, std::chars_format::general);
    if (text.empty() || ec != std::errc() || p != e || !std::isfinite(v))
        return std::nullopt;
    return v;
}

/// Shortest text that reads back to the same double ("0.85", "40.5", "96.0").
std::string numberText(double v) {
    return json(v).dump();
}

std::string integerText(double v) {
    return std::to_string(static_cast<long long>(v));
}

GpuSpec blankGpu() {
    GpuSpec g;
    g.id = "custom";
    g.name = "custom";
    return g;
}

// --- Row builders: each makes the check/set/get/JSON hooks of one kind of field. -----------

Field baseRow(std::string key, std::string flag, FieldKind kind, std::string help,
              std::string example) {
    Field f;
    f.key = std::move(key);
    f.flag = std::move(flag);
    f.kind = kind;
    f.help = std::move(help);
    f.example = std::move(example);
    return f;
}

/// An integer Deployment member in [min, max].
Field integerRow(std::string key, std::string flag, std::int64_t Deployment::*member,
                 std::int64_t min, std::int64_t max, std::string unit, std::string help,
                 std::string example) {
    Field f = baseRow(std::move(key), std::move(flag), FieldKind::Integer, std::move(help),
                      std::move(example));
    f.defaultText = std::to_string(Deployment{}.*member);
    f.min = static_cast<double>(min);
    f.max = static_cast<double>(max);
    f.unit = std::move(unit);
    f.jsonRule = "must be a positive integer";
    f.set = [member](Session& s, std::string_view t, FieldNotes&) {
        s.deployment.*member = parseInteger(t).value_or(0);
    };
    f.get = [member](const Session& s) -> std::optional<std::string> {
        return std::to_string(s.deployment.*member);
    };
    return f;
}

/// A real Deployment member in (min, max].
Field numberRow(std::string key, std::string flag, double Deployment::*member, double min,
                double max, std::string unit, std::string help, std::string example) {
    Field f = baseRow(std::move(key), std::move(flag), FieldKind::Number, std::move(help),
                      std::move(example));
    f.defaultText = numberText(Deployment{}.*member);
    f.min = min;
    f.max = max;
    f.unit = std::move(unit);
    f.set = [member](Session& s, std::string_view t, FieldNotes&) {
        s.deployment.*member = parseNumber(t).value_or(0);
    };
    f.get = [member](const Session& s) -> std::optional<std::string> {
        return numberText(s.deployment.*member);
    };
    return f;
}

/// An optional real Deployment member in (min, max]; unset is no flag, a JSON null, or "".
Field optionalNumberRow(std::string key, std::string flag,
                        std::optional<double> Deployment::*member, double min, double max,
                        std::string unit, std::string help, std::string example) {
    Field f = baseRow(std::move(key), std::move(flag), FieldKind::Number, std::move(help),
                      std::move(example));
    f.min = min;
    f.max = max;
    f.unit = std::move(unit);
    f.set = [member](Session& s, std::string_view t, FieldNotes&) {
        if (t.empty())
            (s.deployment.*member).reset();
        else
            s.deployment.*member = parseNumber(t).value_or(0);
    };
    f.get = [member](const Session& s) -> std::optional<std::string> {
        if (!(s.deployment.*member))
            return std::nullopt;
        return numberText(*(s.deployment.*member));
    };
    return f;
}

/// A model or GPU reference: a preset id or a path.
Field referenceRow(std::string key, std::string flag, std::string Session::*member,
                   std::string help, std::string example) {
    Field f = baseRow(std::move(key), std::move(flag), FieldKind::Text, std::move(help),
                      std::move(example));
    f.group = FieldGroup::Selection;
    f.defaultText = Session{}.*member;
    f.jsonRule = "must be a non-empty string";
    f.set = [member](Session& s, std::string_view t, FieldNotes&) {
        s.*member = std::string(t);
        if (member == &Session::gpu)
            s.customGpu.reset(); // naming a GPU replaces the custom figures
    };
    f.get = [member](const Session& s) -> std::optional<std::string> {
        if (member == &Session::gpu && s.customGpu)
            return std::nullopt; // the custom rows carry it
        return s.*member;
    };
    return f;
}

/// A custom GPU's text figure (its name, its link's name).
Field gpuTextRow(std::string key, std::string flag, std::string GpuSpec::*member, std::string help,
                 std::string example) {
    Field f = baseRow(std::move(key), std::move(flag), FieldKind::Text, std::move(help),
                      std::move(example));
    f.group = FieldGroup::CustomGpu;
    f.jsonRule = "must be a non-empty string";
    f.set = [member](Session& s, std::string_view t, FieldNotes&) {
        if (!s.customGpu)
            s.customGpu = blankGpu();
        (*s.customGpu).*member = std::string(t);
    };
    f.get = [member](const Session& s) -> std::optional<std::string> {
        if (!s.customGpu || ((*s.customGpu).*member).empty())
            return std::nullopt;
        return (*s.customGpu).*member;
    };
    return f;
}

namespace {

/// An integer row's range check (its extra words pass) and JSON reading.
void finishInteger(Field& f) {
    if (!f.check) {
        const double min = f.min, max = f.max;
        std::vector<std::string> words = f.words;
        f.check = [min, max, words](std::string_view t) -> std::string {
            for (const auto& w : words)
                if (w == t)
                    return {};
            auto v = parseInteger(t);
            if (!v)
                return "must be an integer, got " + quoted(t);
            if (static_cast<double>(*v) < min)
                return min == 1
                           ? "must be a positive integer, got " + std::to_string(*v)
                           : "must be at least " + integerText(min) + ", got " + std::to_string(*v);
            if (static_cast<double>(*v) > max)
                return "must be at most " + integerText(max) + ", got " + std::to_string(*v);
            return {};
        };
    }
    if (!f.fromJson)
        f.fromJson = [words = f.words](const json& v) -> std::optional<std::string> {
            if (v.is_number_integer())
                return std::to_string(v.get<std::int64_t>());
            if (v.is_string())
                for (const auto& w : words)
                    if (w == v.get<std::string>())
                        return w;
            return std::nullopt;
        };
}

/// A real row's range check, JSON rule and JSON reading (null clears an optional one).
void finishNumber(Field& f) {
    auto readable = [](double v) { return v == std::floor(v) ? integerText(v) : numberText(v); };
    const std::string shortRange = "(" + readable(f.min) + ", " + readable(f.max) + "]";
    if (!f.check) {
        const double min = f.min, max = f.max;
        std::vector<std::string> words = f.words;
        f.check = [min, max, words, shortRange](std::string_view t) -> std::string {
            for (const auto& w : words)
                if (w == t)
                    return {};
            auto v = parseNumber(t);
            if (!v)
                return "must be a number, got " + quoted(t);
            if (!(*v > min && *v <= max))
                return "must be in " + shortRange + ", got " + numberText(*v);
            return {};
        };
    }
    const bool optional = f.defaultText.empty() && f.group == FieldGroup::Deployment;
    if (f.jsonRule.empty())
        f.jsonRule = "must be a number in " + shortRange + (optional ? " or null" : "");
    if (!f.fromJson)
        f.fromJson = [optional](const json& v) -> std::optional<std::string> {
            if (v.is_number())
                return numberText(v.get<double>());
            if (v.is_null() && optional)
                return std::string();
            return std::nullopt;
        };
}

/// A word or text row: anything but empty, from a non-empty JSON string.
void finishText(Field& f) {
    if (!f.check)
        f.check = [](std::string_view t) -> std::string {
            return t.empty() ? "must not be empty" : "";
        };
    if (!f.fromJson)
        f.fromJson = [](const json& v) -> std::optional<std::string> {
            if (v.is_string() && !v.get<std::string>().empty())
                return v.get<std::string>();
            return std::nullopt;
        };
}

/// The getter's text, typed as the row's kind.
void finishToJson(Field& f) {
    if (!f.toJson) {
        const FieldKind kind = f.kind;
        auto get = f.get;
        f.toJson = [kind, get](const Session& s) -> std::optional<json> {
            auto t = get(s);
            if (!t)
                return std::nullopt;
            if (kind == FieldKind::Integer) {
                if (auto n = parseInteger(*t))
                    return json(*n);
                return json(*t);
            }
            if (kind == FieldKind::Number)
                return json(parseNumber(*t).value_or(0));
            return json(*t);
        };
    }
}

} // namespace

/// Type-only JSON → text conversion and range checks shared by every row of a kind.
void finish(Field& f) {
    switch (f.kind) {
    case FieldKind::Integer:
        finishInteger(f);
        break;
    case FieldKind::Number:
        finishNumber(f);
        break;
    case FieldKind::Choice:
    case FieldKind::Text:
        finishText(f);
        break;
    }
    finishToJson(f);
}

} // namespace kvscope::schema_detail
