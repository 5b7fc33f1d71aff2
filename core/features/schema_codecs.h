// Internal to the schema (schema.cpp, schema_codecs.cpp): the number texts the rows read and
// write, and the builders of the rows that are not templates. Not part of core's API.
#pragma once

#include "core/features/schema.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvscope::schema_detail {

std::string quoted(std::string_view s);
std::optional<std::int64_t> parseInteger(std::string_view text);
/// Locale-independent (the GUI runs under the user's LC_NUMERIC, where strtod may want "0,85").
std::optional<double> parseNumber(std::string_view text);
/// Shortest text that reads back to the same double ("0.85", "40.5", "96.0").
std::string numberText(double v);
std::string integerText(double v);
GpuSpec blankGpu();

/// A row's names and texts; each builder below then sets its kind's range, default and hooks.
Field baseRow(std::string key, std::string flag, FieldKind kind, std::string help,
              std::string example);
/// An integer Deployment member in [min, max].
Field integerRow(std::string key, std::string flag, std::int64_t Deployment::*member,
                 std::int64_t min, std::int64_t max, std::string unit, std::string help,
                 std::string example);
/// A real Deployment member in (min, max].
Field numberRow(std::string key, std::string flag, double Deployment::*member, double min,
                double max, std::string unit, std::string help, std::string example);
/// An optional real Deployment member in (min, max]; unset is no flag, a JSON null, or "".
Field optionalNumberRow(std::string key, std::string flag,
                        std::optional<double> Deployment::*member, double min, double max,
                        std::string unit, std::string help, std::string example);
/// A model or GPU reference: a preset id or a path.
Field referenceRow(std::string key, std::string flag, std::string Session::*member,
                   std::string help, std::string example);
/// A custom GPU's text figure (its name, its link's name).
Field gpuTextRow(std::string key, std::string flag, std::string GpuSpec::*member, std::string help,
                 std::string example);

/// Type-only JSON → text conversion and range checks shared by every row of a kind.
void finish(Field& f);

} // namespace kvscope::schema_detail
