#pragma once
// Runs the built `cflow` executable and captures its exit code, stdout and stderr.
#include <string>
#include <vector>

namespace cflow::test {

struct CommandResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

// Arguments are passed without a shell: each is quoted for /bin/sh.
CommandResult run_cflow(const std::vector<std::string>& args);

// As run_cflow, with `stdin_bytes` fed to the command's stdin (written to a temp file, redirected with <).
CommandResult run_cflow_with_input(const std::vector<std::string>& args, const std::string& stdin_bytes);

// As run_cflow, with stdin redirected from `stdin_path` (a device such as /dev/zero, a FIFO).
CommandResult run_cflow_with_stdin_from(const std::vector<std::string>& args, const std::string& stdin_path);

// Expects the CLI's failure contract: non-zero exit, exactly one stderr line containing
// `needle`, nothing on stdout.
void expect_one_line_failure(const CommandResult& r, const std::string& needle);

} // namespace cflow::test
