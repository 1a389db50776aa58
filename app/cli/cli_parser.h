#pragma once
// The cflow command line on CLI11: every command, its options, their defaults, help text and
// validation declared once (cli_parser.cpp), parsed into CommandArgs. Help and usage errors are
// produced here as text and an exit code, so a test can check them without running a process.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command_args.h"

namespace CLI {
class App;
} // namespace CLI

namespace cflow::cli {

struct ParseOutcome {
    std::string command;           // the command to run ("generate", "bench experts") when exit_code is unset
    std::optional<int> exit_code;  // set: print out / err and exit with it (help, --version, usage errors)
    std::string out;               // for stdout (help asked for, --version)
    std::string err;               // for stderr (usage errors, help when no command was given)
};

// Exit codes of the parser: a usage error of a command is 1, like any failure of the command;
// no command, an unknown one or arguments after --version are 2.
inline constexpr int kUsageErrorExit = 1;
inline constexpr int kNoCommandExit = 2;

class CommandLine {
public:
    explicit CommandLine(std::string version = "");
    ~CommandLine();
    CommandLine(const CommandLine&) = delete;
    CommandLine& operator=(const CommandLine&) = delete;

    // argv without the program name. Parse once per CommandLine.
    ParseOutcome parse(const std::vector<std::string>& args);
    const CommandArgs& args() const { return args_; }

    // Every command as typed after `cflow` ("bench experts" included), in the order --help lists them.
    std::vector<std::string> command_names() const;

private:
    CommandArgs args_;
    std::string version_;
    bool version_flag_ = false;
    std::unique_ptr<CLI::App> app_;
};

} // namespace cflow::cli
