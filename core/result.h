// Errors are values in kvscope: every fallible core function returns Result<T>.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace kvscope {

/// One validation or parse failure. `field` names the config field or flag at fault
/// (e.g. "num_key_value_heads", "tp"); `rule` says, in an engine user's words, what was broken.
struct Error {
    std::string field;
    std::string rule;

    /// One line, "field: rule", never containing a newline.
    std::string message() const;
};

/// Either a value or an Error. Deliberately small (C++20 has no std::expected).
template <class T> class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}
    Result(Error error) : v_(std::move(error)) {}

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    const T& value() const& { return std::get<0>(v_); }
    T& value() & { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    const T* operator->() const { return &std::get<0>(v_); }
    const T& operator*() const { return std::get<0>(v_); }

    const Error& error() const { return std::get<1>(v_); }

private:
    std::variant<T, Error> v_;
};

/// Result<void> stand-in.
struct Ok {};
using Status = Result<Ok>;

inline Error makeError(std::string field, std::string rule) {
    return Error{std::move(field), std::move(rule)};
}

} // namespace kvscope
