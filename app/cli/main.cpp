// cflow: the headless command-line interface (convert, generate, chat, serve, inspect, critical-path,
// tokenize, detokenize, template, synth, ...). The command line is declared in cli_parser.cpp.
#include <cstdio>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "cli_parser.h"
#include "commands.h"

namespace {

// Runs the parsed command and returns its exit code; nullopt when `command` names none.
std::optional<int> dispatch(const std::string& command, const cflow::cli::CommandArgs& args) {
    using namespace cflow::cli;
    if (command == "convert") return run_convert(args.convert);
    if (command == "generate") return run_generate(args.generate);
    if (command == "logits") return run_logits(args.logits);
    if (command == "inspect") return run_inspect(args.inspect);
    if (command == "bench") return run_bench(args.bench);
    if (command == "bench experts") return run_bench_experts(args.bench_experts);
    if (command == "critical-path") return run_critical_path(args.critical_path);
    if (command == "plan") return run_plan(args.plan);
    if (command == "chat") return run_chat(args.chat);
    if (command == "perplexity") return run_perplexity(args.perplexity);
    if (command == "tokenize") return run_tokenize(args.tokenize);
    if (command == "detokenize") return run_detokenize(args.detokenize);
    if (command == "template") return run_template(args.template_);
    if (command == "synth") return run_synth(args.synth);
    if (command == "serve") return run_serve(args.serve);
    if (command == "scorecard") return run_scorecard(args.scorecard);
    return std::nullopt;
}

} // namespace

int main(int argc, char** argv) {
    std::string command = argc > 1 ? argv[1] : "";
    // The libraries report their own failures as Result errors; what still escapes here is an
    // allocation in the command's own code (argument vectors, output strings) or a bug. Either
    // way the user gets the one-line "cflow <command>: ..." message and a failing exit status
    // instead of std::terminate's abort and core dump.
    try {
        cflow::cli::CommandLine command_line(CFLOW_VERSION);
        const cflow::cli::ParseOutcome parsed = command_line.parse(std::vector<std::string>(argv + 1, argv + argc));
        if (parsed.exit_code) {
            std::fputs(parsed.out.c_str(), stdout);
            std::fputs(parsed.err.c_str(), stderr);
            return *parsed.exit_code;
        }
        command = parsed.command;
        if (auto code = dispatch(command, command_line.args())) return *code;
        return cflow::cli::fail(command, "internal error: the command has no implementation");
    } catch (const std::bad_alloc&) {
        return cflow::cli::fail(command, "out of memory");
    } catch (const std::exception& e) {
        return cflow::cli::fail(command, std::string("internal error: ") + e.what());
    } catch (...) {  // not derived from std::exception: still one line, not std::terminate
        return cflow::cli::fail(command, "internal error: an unknown exception");
    }
}
