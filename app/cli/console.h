#pragma once
// Standard-stream helpers for the text-in/text-out commands (tokenize, detokenize, template,
// chat): binary-safe stdin/stdout and whether stdin is an interactive terminal.
// Platform parts live in console_posix.cpp / console_win32.cpp.
#include <optional>
#include <string>

namespace cflow::cli {

// Puts stdin and stdout in binary mode (Windows would otherwise turn "\n" into "\r\n" and
// stop at ^Z); a no-op on POSIX.
void set_binary_stdio();

// True when stdin is a terminal (chat prints its "> " prompt only then).
bool stdin_is_terminal();

// All of stdin, byte for byte; std::nullopt when reading fails.
std::optional<std::string> read_all_stdin();

// Writes bytes to stdout exactly and flushes; false when the write fails (e.g. closed pipe).
bool write_stdout(const std::string& bytes);

} // namespace cflow::cli
