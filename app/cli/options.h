// kvscope-cli's options through CLI11: the deployment schema's rows (core/features/schema.h) become
// options with validators, and CLI11's parse failures become the CLI's one-line errors.
#pragma once

#include "core/features/schema.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kvscope::cli {

/// Prints "error: <message>" as one line on stderr and returns 2.
int fail(const std::string& message);

/// The whole of `text` as an integer (std::stoll's reading: "8", "+8", " 8"); nullopt when
/// anything is left over or nothing is read ("", "8x", "eight", out of range).
std::optional<long long> wholeInteger(const std::string& text);

/// Accepts an integer in [min, max]; anything else fails with `rule`.
CLI::Validator integerIn(long long min, long long max, std::string rule);

/// The schema row's check as a CLI11 validator ("--tp: must be an integer, got 'eight'").
CLI::Validator fieldValidator(const Field& f);

/// Adds `f` to `app` as an option; a value given lands in `texts`.
CLI::Option* addFieldOption(CLI::App& app, FieldTexts& texts, const Field& f);

/// Adds every schema row that `pick` accepts (all of them by default).
void addFieldOptions(CLI::App& app, FieldTexts& texts,
                     const std::function<bool(const Field&)>& pick = {});

/// CLI11's parse failure as one line naming the flag: "--model: needs a value".
std::string parseErrorLine(const CLI::ParseError& e, const CLI::App& app);

/// The first word CLI11 left over, as one line ("--tpp: unknown option (see kvscope-cli size
/// --help)" or "x: unexpected argument"); "" when none is left.
std::string leftoverError(const CLI::App& app);

/// Parses a quoted flag string (compare's --a "--model m --tp 8") with `app`; "" or the error.
std::string parseLine(CLI::App& app, const std::string& line);

} // namespace kvscope::cli
