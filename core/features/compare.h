// Two configurations side by side: A (pinned) and B (current), with the ratios B / A a
// reader cares about and a sentence for each.
#pragma once

#include "core/features/session.h"
#include "core/law/law.h"

#include <optional>
#include <string>
#include <vector>

namespace kvscope {

/// One compared quantity. ratio = B / A; NaN when A is 0 (phrase then says "n/a").
struct CompareRatio {
    std::string key;   ///< "bytes_per_token_per_rank", "tokens", "concurrency", "intensity",
                       ///< "attainable_fraction"
    std::string label; ///< "bytes per token per rank"
    std::string field; ///< the report field compared (report_fields.h key)
    double a = 0, b = 0;
    double ratio = 0;
    std::string phrase; ///< "×8 fewer bytes per token per rank", "same tokens"
};

struct Comparison {
    Report a, b;
    std::vector<CompareRatio> ratios; ///< in the order of CompareRatio::key's list
    /// When one side is MLA (latent) and the other a GQA-family cache: the real-valued
    /// min(TP, h_kv) at which the GQA side stops losing at a fixed pool (§6), c_gqa / c_mla.
    std::optional<double> crossover;
    std::string crossoverPhrase;

    /// The ratio named `key`, or nullptr.
    const CompareRatio* ratio(const std::string& key) const;
};

/// Evaluates both scenarios and compares them. Errors name the side: "b.tp: ...".
Result<Comparison> compare(const Scenario& a, const Scenario& b);
/// Compares two reports already evaluated.
Comparison compareReports(const Report& a, const Report& b);

/// "×8 fewer bytes per token per rank" (ratio 0.125, lessWord "fewer"), "×1.55 more tokens",
/// "same tokens" (within 0.5%, sameRatio), "n/a" for a NaN ratio. The factor prints with up to
/// two decimals, trailing zeros dropped. The one phraser: the compare table, `kvscope-cli
/// compare` and the numbers panel's change lines all say a change with it.
std::string phraseRatio(double ratio, const std::string& label, const std::string& moreWord,
                        const std::string& lessWord);
/// Whether a ratio reads as "same": within 0.5% of 1, phraseRatio's threshold.
bool sameRatio(double ratio);
/// A compared value as its report field shows it ("40 KiB", "162 requests").
std::string formatCompareValue(const CompareRatio& r, double value);

/// Plain text table of both reports' compared numbers and ratios (the CLI's output).
std::string comparisonText(const Scenario& a, const Scenario& b, const Comparison& c);
/// {"a": <size --json object>, "b": ..., "ratios": {key: {a, b, ratio, phrase}}, "crossover"}.
std::string comparisonJson(const Scenario& a, const Scenario& b, const Comparison& c);

} // namespace kvscope
