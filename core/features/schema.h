// The deployment schema: every knob a user sets (model and GPU selection, each Deployment
// field, a custom GPU's figures) as one row of a table. The CLI's options, the GUI's start-up
// flags, the session JSON (and through it the GUI's saved settings) all come from these rows,
// so a knob has one name everywhere: its flag ("--gpu-mem-util") and its JSON key
// ("gpu_mem_util"). Adding a knob is adding one row in schema.cpp.
#pragma once

#include "core/features/session.h"
#include "core/result.h"

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvscope {

/// What a field's value looks like on a command line and in JSON.
enum class FieldKind {
    Integer, ///< a whole number in [min, max] (some also take words: h_kv "latent")
    Number,  ///< a finite real in (min, max]
    Choice,  ///< one of a closed set of words (a dtype, the pool model)
    Text,    ///< free text: a preset id or a path
};

/// Which part of the state a field belongs to.
enum class FieldGroup {
    Selection,  ///< which model and GPU: references, resolved later
    Deployment, ///< a Deployment member
    CustomGpu,  ///< a GPU figure; in JSON it sits inside the "gpu" object
};

/// What reading a field noticed besides its value.
struct FieldNotes {
    bool latentRequested = false; ///< h_kv was "latent"/"mla": the caller checks MLA
};

/// One row of the schema.
struct Field {
    std::string key;  ///< JSON key ("gpu_mem_util"); for CustomGpu, inside the "gpu" object
    std::string flag; ///< command-line flag, the same in kvscope-cli and kvscope
    FieldKind kind = FieldKind::Integer;
    FieldGroup group = FieldGroup::Deployment;
    std::string defaultText;           ///< the default as text; empty when the default is "unset"
    double min = 0, max = 0;           ///< Integer: [min, max]; Number: (min, max]
    std::string unit;                  ///< "tokens", "GiB", ... (help text)
    std::string help;                  ///< one line
    std::vector<std::string> words;    ///< Choice: the canonical words; Integer: extra words
    std::string example;               ///< a valid value other than the default (tests, docs)
    std::vector<std::string> oldFlags; ///< deprecated flag spellings, still read ("--util")
    std::vector<std::string> oldKeys;  ///< deprecated JSON keys, still read ("util")

    /// Checks a command-line value: "" when it is acceptable, else the rule it breaks
    /// ("must be an integer, got 'eight'"). Engine rules that need the model come later
    /// (validate()).
    std::function<std::string(std::string_view)> check;
    /// Stores a checked value into the session.
    std::function<void(Session&, std::string_view, FieldNotes&)> set;
    /// The session's value as command-line text; nullopt when unset (no flag, no JSON key).
    std::function<std::optional<std::string>(const Session&)> get;
    /// The session's value as JSON (the getter's text, typed).
    std::function<std::optional<nlohmann::json>(const Session&)> toJson;
    /// A JSON value as command-line text for check/set; nullopt when its type is wrong.
    /// A JSON null clears an optional field (empty text).
    std::function<std::optional<std::string>(const nlohmann::json&)> fromJson;
    /// The rule a JSON value of the wrong type or range breaks ("must be a positive integer").
    std::string jsonRule;
};

/// Every field, in help order: selection, then the deployment, then the custom GPU.
const std::vector<Field>& schemaFields();

/// The field with this JSON key, flag, old flag or old key (in `group` when given); nullptr if
/// none.
const Field* findField(std::string_view nameOrFlag, std::optional<FieldGroup> group = std::nullopt);

/// Values given as text, as on a command line: (field, value) in the order given.
using FieldTexts = std::vector<std::pair<const Field*, std::string>>;

/// Applies values onto `base`. Selection and deployment fields first; custom-GPU fields then
/// start from the GPU the session names (its preset figures, id "custom"), so
/// `--gpu h100-sxm --gpu-bandwidth-tb-s 4` is an H100 with 4 TB/s. Errors name the flag.
Result<Session> applyFieldTexts(Session base, const FieldTexts& values,
                                FieldNotes* notes = nullptr);

/// Every field's value in `s` as command-line words ({"--tp", "8", ...}), unset ones left out.
std::vector<std::string> sessionToFlags(const Session& s);

/// Reports a deprecated spelling: one line on stderr ("kvscope: ..."), once per process for
/// each distinct line. A test may install its own sink; returns the previous one.
using DeprecationSink = std::function<void(const std::string&)>;
DeprecationSink setDeprecationSink(DeprecationSink sink);
void reportDeprecation(const std::string& line);

} // namespace kvscope
