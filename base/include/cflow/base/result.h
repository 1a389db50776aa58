#pragma once
// Result<T> / Status: a value or an error with a kind and a message. Nothing in base/, formats/
// or engine/ throws across its public API; every fallible call returns one of these. Callers
// branch on kind() (never on the message text); the message says what and where for a person.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace cflow {

enum class ErrorKind : uint8_t {
    InvalidInput,  // malformed or out-of-range input: a corrupt file, a bad argument, a bad token id
    Unsupported,   // well-formed but not handled here: an unknown architecture, a dtype, a missing ISA/library
    Io,            // the operating system refused: open, read, write, mmap, rename, a full disk
    OutOfMemory,   // an allocation failed (std::bad_alloc caught at a public entry)
    Cancelled,     // the caller's CancelToken was set; the job stopped cleanly
    ContextFull,   // the session's KV cache cannot hold the tokens asked for
    OverBudget,    // a sandboxed job ran out of its budget (a chat template's steps, memory or time)
    Internal,      // a broken invariant: a bug, never the user's input
};

// "invalid_input", "unsupported", "io", "out_of_memory", "cancelled", "context_full", "over_budget",
// "internal".
constexpr std::string_view error_kind_name(ErrorKind kind) {
    switch (kind) {
    case ErrorKind::InvalidInput: return "invalid_input";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::Io: return "io";
    case ErrorKind::OutOfMemory: return "out_of_memory";
    case ErrorKind::Cancelled: return "cancelled";
    case ErrorKind::ContextFull: return "context_full";
    case ErrorKind::OverBudget: return "over_budget";
    case ErrorKind::Internal: return "internal";
    }
    return "internal";
}

struct Error {
    ErrorKind kind = ErrorKind::InvalidInput;
    std::string message;
};

// Most failures are about the input (file contents, arguments): that is the default kind.
inline Error make_error(std::string message) { return Error{ErrorKind::InvalidInput, std::move(message)}; }
inline Error make_error(ErrorKind kind, std::string message) { return Error{kind, std::move(message)}; }
// The one wording of a cancelled job, so front ends can show it the same way everywhere.
inline Error cancelled_error(std::string_view what) {
    return Error{ErrorKind::Cancelled, std::string(what) + ": cancelled"};
}
inline Error out_of_memory_error(std::string_view what) {
    return Error{ErrorKind::OutOfMemory, std::string(what) + ": out of memory"};
}

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
    ErrorKind kind() const { return std::get<1>(state_).kind; }
    Error take_error() const { return std::get<1>(state_); }

private:
    std::variant<T, Error> state_;
};

// Status: success or an error.
class [[nodiscard]] Status {
public:
    Status() = default;
    Status(Error error) : failed_(true), kind_(error.kind), message_(std::move(error.message)) {}
    static Status success() { return Status(); }

    bool ok() const { return !failed_; }
    explicit operator bool() const { return ok(); }
    const std::string& error() const { return message_; }
    ErrorKind kind() const { return kind_; }
    Error take_error() const { return Error{kind_, message_}; }

private:
    bool failed_ = false;
    ErrorKind kind_ = ErrorKind::InvalidInput;
    std::string message_;
};

} // namespace cflow
