#include "cli_runner.h"

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_support.h"

namespace cflow::test {
namespace {
std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}
std::string slurp_runner(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}
} // namespace

CommandResult run_cflow(const std::vector<std::string>& args) {
    const auto dir = temp_dir("cli");
    std::string cmd = shell_quote(CFLOW_CLI_PATH);
    for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
    cmd.append(" >").append(shell_quote((dir / "out").string()));
    cmd.append(" 2>").append(shell_quote((dir / "err").string()));
    CommandResult r;
    const int status = std::system(cmd.c_str());
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    r.out = slurp_runner(dir / "out");
    r.err = slurp_runner(dir / "err");
    return r;
}

CommandResult run_cflow_with_input(const std::vector<std::string>& args, const std::string& stdin_bytes) {
    const auto in_path = temp_dir("cli-in-file") / "in";
    std::ofstream(in_path, std::ios::binary) << stdin_bytes;
    return run_cflow_with_stdin_from(args, in_path.string());
}

CommandResult run_cflow_with_stdin_from(const std::vector<std::string>& args, const std::string& stdin_path) {
    const auto dir = temp_dir("cli-in");
    const std::filesystem::path in_path = stdin_path;
    std::string cmd = shell_quote(CFLOW_CLI_PATH);
    for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
    cmd.append(" <").append(shell_quote(in_path.string()));
    cmd.append(" >").append(shell_quote((dir / "out").string()));
    cmd.append(" 2>").append(shell_quote((dir / "err").string()));
    CommandResult r;
    const int status = std::system(cmd.c_str());
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    r.out = slurp_runner(dir / "out");
    r.err = slurp_runner(dir / "err");
    return r;
}

void expect_one_line_failure(const CommandResult& r, const std::string& needle) {
    size_t lines = 0;
    for (char ch : r.err) lines += ch == '\n';
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(lines, 1u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
}

} // namespace cflow::test
