#pragma once
// Result<T>: a value or an error message. Nothing in formats/ or engine/ throws
// across its public API; every fallible call returns one of these.
#include <string>
#include <utility>
#include <variant>

namespace cflow {

struct Error {
    std::string message;
};

inline Error make_error(std::string message) { return Error{std::move(message)}; }

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}

    bool ok() const { return state_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(state_); }
    const T& value() const& { return std::get<0>(state_); }
    T&& value() && { return std::get<0>(std::move(state_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() { return value(); }
    const T& operator*() const { return value(); }

    const std::string& error() const { return std::get<1>(state_).message; }
    Error take_error() const { return std::get<1>(state_); }

private:
    std::variant<T, Error> state_;
};

// Status: success or an error message.
class [[nodiscard]] Status {
public:
    Status() = default;
    Status(Error error) : failed_(true), message_(std::move(error.message)) {}
    static Status success() { return Status(); }

    bool ok() const { return !failed_; }
    explicit operator bool() const { return ok(); }
    const std::string& error() const { return message_; }
    Error take_error() const { return Error{message_}; }

private:
    bool failed_ = false;
    std::string message_;
};

} // namespace cflow
