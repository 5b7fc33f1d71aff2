// The two conversions between core's std::string (UTF-8) and Qt's QString, for the widgets.
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

} // namespace kvscope::ui
