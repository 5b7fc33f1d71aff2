#include "core/result.h"

namespace kvscope {

std::string Error::message() const {
    std::string out = field.empty() ? rule : field + ": " + rule;
    for (char& c : out)
        if (c == '\n' || c == '\r' || c == '\t')
            c = ' ';
    return out;
}

} // namespace kvscope
