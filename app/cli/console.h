#pragma once
// Standard-stream helpers for the text-in/text-out commands (tokenize, detokenize, template,
// chat): binary-safe stdin/stdout and whether stdin is an interactive terminal.
// Platform parts live in console_posix.cpp / console_win32.cpp.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cflow/base/result.h"

namespace cflow::cli {

// Puts stdin and stdout in binary mode (Windows would otherwise turn "\n" into "\r\n" and
// stop at ^Z); a no-op on POSIX.
void set_binary_stdio();

// True when stdin is a terminal (chat prints its "> " prompt only then).
bool stdin_is_terminal();

// All of stdin, byte for byte. InvalidInput once it passes max_bytes (stdin may be /dev/zero
// or an endless pipe: the cap ends it in milliseconds instead of at bad_alloc); Io when reading fails.
Result<std::string> read_all_stdin(uint64_t max_bytes);

// One line of stdin without its '\n' (and '\r'); std::nullopt at end of input. InvalidInput
// when a line passes max_bytes before its newline (`cflow chat < /dev/zero` has no newline).
Result<std::optional<std::string>> read_stdin_line(uint64_t max_bytes);

// text with terminal control characters (C0 but tab, DEL, UTF-8-encoded C1) written as \xNN,
// for strings a file supplies (a model's general.name) that end up in a status line: an ESC
// in them would otherwise drive the user's terminal.
std::string terminal_safe(std::string_view text);

// Writes bytes to stdout exactly and flushes; false when the write fails (e.g. closed pipe).
bool write_stdout(const std::string& bytes);

} // namespace cflow::cli
