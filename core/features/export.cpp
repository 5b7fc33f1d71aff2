#include "core/features/export.h"

#include "core/format.h"

#include <sstream>

namespace kvscope {

ReportNumber toReportNumber(const ReportField& f) {
    ReportNumber n;
    n.key = f.name;
    n.label = f.label;
    n.unit = f.unit;
    n.value = f.value.value_or(0);
    n.integer = f.integer;
    n.precision = f.precision;
    n.known = f.value.has_value();
    n.path = f.key;
    n.section = f.section;
    return n;
}

namespace {

std::vector<ReportNumber> numbers(const std::vector<ReportField>& fields) {
    std::vector<ReportNumber> out;
    out.reserve(fields.size());
    for (const ReportField& f : fields)
        out.push_back(toReportNumber(f));
    return out;
}

ReportField toField(const ReportNumber& n) {
    ReportField f;
    f.key = n.path;
    f.name = n.key;
    f.label = n.label;
    f.unit = n.unit;
    f.section = n.section;
    f.precision = n.precision;
    f.integer = n.integer;
    if (n.known)
        f.value = n.value;
    return f;
}

std::string csvRows(const Report& r, const std::vector<ReportNumber>& rows) {
    std::ostringstream out;
    out << "key,label,value,unit\n";
    out << "variant,Variant," << csvField(r.variant) << ",\n";
    out << "kv_dtype,KV dtype," << toString(r.kvDtype) << ",\n";
    out << "weight_dtype,Weight dtype," << toString(r.weightDtype) << ",\n";
    for (const auto& n : rows)
        out << n.key << ',' << csvField(n.label) << ',' << formatNumberPlain(n) << ','
            << csvField(n.unit) << '\n';
    return out.str();
}

} // namespace

std::vector<ReportNumber> reportNumbers(const Report& r) {
    return numbers(reportFields(r));
}

std::vector<ReportNumber> reportNumbers(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    return numbers(reportFields(r, &m, &gpu));
}

std::optional<double> reportNumber(const Report& r, const std::string& key) {
    for (const auto& f : reportFields(r))
        if (f.name == key)
            return f.value;
    return std::nullopt;
}

std::string formatNumberPlain(const ReportNumber& n) {
    return formatFieldPlain(toField(n));
}

std::string formatNumberHuman(const ReportNumber& n) {
    return formatFieldHuman(toField(n));
}

std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos)
        return s;
    std::string out = "\"";
    for (char c : s) {
        if (c == '"')
            out += '"';
        out += c;
    }
    return out + "\"";
}

std::string markdownCell(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '|')
            out += '\\';
        out += (c == '\n' || c == '\r') ? ' ' : c;
    }
    return out;
}

std::string reportCsv(const Report& r) {
    return csvRows(r, reportNumbers(r));
}

std::string reportCsv(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    return csvRows(r, reportNumbers(m, gpu, r));
}

std::string reportMarkdown(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    std::ostringstream out;
    out << "### " << markdownCell(m.name) << " on " << markdownCell(gpu.name) << ", "
        << markdownCell(r.variant) << ", TP=" << r.tp;
    if (r.dcp > 1)
        out << ", DCP=" << r.dcp;
    out << ", KV " << toString(r.kvDtype) << "\n\n";
    out << "| Quantity | Value |\n|---|---:|\n";
    for (const auto& n : reportNumbers(m, gpu, r))
        out << "| " << markdownCell(n.label) << " | " << markdownCell(formatNumberHuman(n))
            << " |\n";
    return out.str();
}

std::string reportJson(const ModelSpec& m, const GpuSpec& gpu, const Report& r) {
    return jsonReport(m, gpu, r);
}

} // namespace kvscope
