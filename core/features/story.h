// Story mode: a guided sequence of states with captions, for teaching and talks. A story is a
// JSON file (resources/stories/chapter.json is the chapter's own); a teacher can write one.
//
// {
//   "title": "MHA → MQA → GQA → MLA",
//   "steps": [
//     {
//       "title": "GQA-8: 162 requests",
//       "caption": "... 162 concurrent 8k requests ...",
//       "state": {"model": "llama-3-70b", "gpu": "h100-sxm", "tp": 8, "h_kv": 8,
//                 "context": 8192, "pool_model": "datasheet"},
//       "compare_with": { ...another state, optional: shown as the pinned A... },
//       "highlight": {"view": "capacity", "number": "max_concurrency"},
//       "key_numbers": [{"field": "max_concurrency", "value": 162, "text": "162"}]
//     }
//   ]
// }
//
// State keys are session.h's (model, gpu, tp, dcp, h_kv: integer | "latent" | "auto",
// kv_dtype, weight_dtype, context, batch, util, pool_model, pool_gib, ...); absent keys take
// the CLI's defaults. key_numbers[].field is an export.h ReportNumber key of the step's state,
// "compare.<key>" of compare_with's, "ratio.<key>" a compare.h ratio (state / compare_with),
// or "crossover". `text` (optional) is how the caption writes the number and must occur in it.
#pragma once

#include "core/features/compare.h"
#include "core/features/session.h"
#include "core/result.h"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvscope {

/// Views a step may ask the GUI to emphasise.
inline constexpr const char* kStoryViews[] = {"cell", "pool",   "capacity", "roofline", "weights",
                                              "tp",   "paging", "compare",  "layers"};

struct StoryHighlight {
    std::string view;   ///< one of kStoryViews; empty = none
    std::string number; ///< a ReportNumber key; empty = none
};

/// A number the caption quotes, checked against core by the tests and `--self-check`.
struct StoryKeyNumber {
    std::string field;
    double value = 0;
    double tolerance = 0; ///< absolute; 0 for an integer `value` means exact
    std::string text;     ///< how the caption writes it ("1,048,576"); may be empty
};

struct StoryStep {
    std::string title;
    std::string caption;
    std::string notes; ///< optional speaker notes, never shown on the slide
    Session state;
    std::optional<Session> compareWith;
    StoryHighlight highlight;
    std::vector<StoryKeyNumber> keyNumbers;
};

struct Story {
    std::string title;
    std::string description;
    std::vector<StoryStep> steps;
};

/// Parses and validates a story: every field's type, every state resolved (models and GPUs
/// loaded, the deployment checked against the engines' rules). Errors are one line naming the
/// step and field: "steps[3].tp: must be a positive integer". Never throws.
Result<Story> parseStory(std::string_view jsonText);
Result<Story> loadStoryFile(const std::string& path);
/// A bundled story by name ("chapter" → resources/stories/chapter.json).
Result<Story> loadBuiltinStory(const std::string& name);
/// Names of the bundled stories.
std::vector<std::string> builtinStories();

/// A story step evaluated: its scenario and report, and the pinned comparison when it has one.
struct EvaluatedStep {
    Scenario scenario;
    Report report;
    std::optional<Scenario> compareScenario;
    std::optional<Comparison> comparison; ///< A = compare_with, B = state
};
Result<EvaluatedStep> evaluateStep(const StoryStep& step);

/// The value a key-number field names for an evaluated step (see the file comment).
Result<double> keyNumberValue(const EvaluatedStep& step, const std::string& field);

/// Checks every key number of every step: value within tolerance, text in the caption.
/// Returns the first mismatch as "steps[2].key_numbers[0]: caption says 162, core computes 161".
Status verifyStory(const Story& story);

/// Clamped navigation over a story's steps. An empty story has no current step.
class StoryCursor {
public:
    StoryCursor() = default;
    explicit StoryCursor(std::size_t stepCount) : count_(stepCount) {}

    std::size_t index() const { return index_; }
    std::size_t count() const { return count_; }
    bool atFirst() const { return index_ == 0; }
    bool atLast() const { return count_ == 0 || index_ + 1 >= count_; }

    /// Each returns true when the index changed.
    bool next();
    bool prev();
    bool first();
    bool last();
    /// Clamps to [0, count - 1].
    bool goTo(std::size_t index);

private:
    std::size_t count_ = 0;
    std::size_t index_ = 0;
};

} // namespace kvscope
