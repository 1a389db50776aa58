#pragma once
// The cflow subcommands, each run on its parsed arguments (command_args.h, declared in
// cli_parser.cpp). Each returns the process exit code; failures print one line
// "cflow <command>: <message>" on stderr.
#include <string>

#include "command_args.h"

namespace cflow::cli {

int run_convert(const ConvertArgs& args);
int run_generate(const GenerateArgs& args);
int run_inspect(const InspectArgs& args);
int run_bench(const BenchArgs& args);
int run_bench_experts(const BenchExpertsArgs& args);  // `cflow bench experts`
int run_critical_path(const CriticalPathArgs& args);
int run_plan(const PlanArgs& args);  // predicted memory and speed before loading (issue 35)
int run_tokenize(const TokenizeArgs& args);
int run_detokenize(const DetokenizeArgs& args);
int run_template(const TemplateArgs& args);
int run_chat(const ChatCommandArgs& args);
int run_remote_chat(const ChatCommandArgs& args);  // chat --endpoint (cmd_chat_remote.cpp)
int run_perplexity(const PerplexityArgs& args);
int run_synth(const SynthArgs& args);
int run_serve(const ServeArgs& args);
int run_logits(const LogitsArgs& args);
int run_scorecard(const ScorecardArgs& args);  // the paper's eight claims measured here

int fail(const std::string& command, const std::string& message);  // prints and returns 1
// message with its line breaks as spaces: an error goes out as one stderr line even when it
// has newlines (a template's raise_exception text, a compiler's note).
std::string one_line(std::string message);

} // namespace cflow::cli
