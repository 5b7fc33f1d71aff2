// The two conversions between core's std::string (UTF-8) and Qt's QString, for the widgets,
// and the model name as the widgets show it.
#pragma once

#include <QString>
#include <string>

namespace kvscope::ui {

inline QString q(const std::string& s) {
    return QString::fromStdString(s);
}
inline std::string s8(const QString& s) {
    return s.toStdString();
}

/// A config file's model is named after its file, "org__name" (google__gemma-3-27b-it): the
/// name without the org, as a preset's title reads; a name without the prefix as it is.
inline QString withoutOrg(const QString& name) {
    const qsizetype sep = name.indexOf(QStringLiteral("__"));
    return sep > 0 ? name.mid(sep + 2) : name;
}

} // namespace kvscope::ui
