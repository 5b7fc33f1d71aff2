#include "options.h"

#include <exception>
#include <iostream>
#include <string>

namespace kvscope::cli {

int fail(const std::string& message) {
    std::string line = message;
    for (char& c : line)
        if (c == '\n' || c == '\r')
            c = ' ';
    std::cerr << "error: " << line << '\n';
    return 2;
}

std::optional<long long> wholeInteger(const std::string& text) {
    std::size_t used = 0;
    long long n = 0;
    try {
        n = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used == 0 || used != text.size())
        return std::nullopt;
    return n;
}

CLI::Validator integerIn(long long min, long long max, std::string rule) {
    return CLI::Validator(
        [min, max, rule](std::string& v) -> std::string {
            const auto n = wholeInteger(v);
            return n && *n >= min && *n <= max ? std::string() : rule;
        },
        std::string());
}

CLI::Validator fieldValidator(const Field& f) {
    const Field* row = &f; // schema rows live as long as the program
    return CLI::Validator([row](std::string& v) { return row->check(v); }, std::string());
}

namespace {

std::string typeName(const Field& f) {
    switch (f.kind) {
    case FieldKind::Integer: {
        std::string t = "N";
        for (const auto& w : f.words)
            if (w != "mla" && w != "auto" && w != "0")
                t += "|" + w;
        return t;
    }
    case FieldKind::Number:
        return "X";
    case FieldKind::Choice: {
        std::string t;
        for (const auto& w : f.words)
            t += (t.empty() ? "" : "|") + w;
        return t;
    }
    case FieldKind::Text:
        return f.group == FieldGroup::Selection ? "ID|PATH" : "TEXT";
    }
    return "VALUE";
}

const char* groupName(FieldGroup g) {
    switch (g) {
    case FieldGroup::Selection:
        return "Model and GPU";
    case FieldGroup::Deployment:
        return "Deployment";
    case FieldGroup::CustomGpu:
        return "Custom GPU (start from --gpu, override its figures)";
    }
    return "Options";
}

} // namespace

CLI::Option* addFieldOption(CLI::App& app, FieldTexts& texts, const Field& f) {
    const Field* row = &f;
    std::string help = f.help;
    if (!f.unit.empty() && f.kind != FieldKind::Choice)
        help += " [" + f.unit + "]";
    auto* o = app.add_option_function<std::string>(
        f.flag, [&texts, row](const std::string& v) { texts.emplace_back(row, v); }, help);
    o->type_name(typeName(f))
        ->check(fieldValidator(f))
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        ->group(groupName(f.group));
    if (!f.defaultText.empty())
        o->default_str(f.defaultText);
    return o;
}

void addFieldOptions(CLI::App& app, FieldTexts& texts,
                     const std::function<bool(const Field&)>& pick) {
    for (const auto& f : schemaFields())
        if (!pick || pick(f))
            addFieldOption(app, texts, f);
}

std::string parseErrorLine(const CLI::ParseError& e, const CLI::App& app) {
    const std::string what = e.what();
    if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
        // "--model: 1 required TEXT missing"
        if (auto colon = what.find(':'); colon != std::string::npos && what.rfind("--", 0) == 0)
            return what.substr(0, colon) + ": needs a value";
    }
    if (dynamic_cast<const CLI::ExtrasError*>(&e))
        return what + " (see kvscope-cli " + app.get_name() + " --help)";
    return what;
}

std::string leftoverError(const CLI::App& app) {
    const auto rest = app.remaining();
    if (rest.empty())
        return {};
    std::string word = rest.front();
    if (word.size() > 1 && word[0] == '-' && !(word[1] >= '0' && word[1] <= '9')) {
        if (auto eq = word.find('='); eq != std::string::npos)
            word = word.substr(0, eq);
        const std::string name = app.get_name();
        return word + ": unknown option (see kvscope-cli " + (name.empty() ? "" : name + " ") +
               "--help)";
    }
    return word + ": unexpected argument";
}

std::string parseLine(CLI::App& app, const std::string& line) {
    try {
        app.parse(line, false);
    } catch (const CLI::CallForHelp&) {
        return "--help: not inside a quoted flag string";
    } catch (const CLI::ParseError& e) {
        return parseErrorLine(e, app);
    }
    return leftoverError(app);
}

} // namespace kvscope::cli
