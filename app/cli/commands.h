#pragma once
// The cflow subcommands. Each returns the process exit code; failures print one line
// "cflow <command>: <message>" on stderr.
#include <string>
#include <vector>

namespace cflow::cli {

int run_convert(const std::vector<std::string>& args);
int run_generate(const std::vector<std::string>& args);
int run_inspect(const std::vector<std::string>& args);
int run_bench(const std::vector<std::string>& args);
int run_bench_experts(const std::vector<std::string>& args);  // `cflow bench experts`
int run_critical_path(const std::vector<std::string>& args);
int run_tokenize(const std::vector<std::string>& args);
int run_detokenize(const std::vector<std::string>& args);
int run_template(const std::vector<std::string>& args);
int run_chat(const std::vector<std::string>& args);
int run_perplexity(const std::vector<std::string>& args);
int run_synth(const std::vector<std::string>& args);
int run_serve(const std::vector<std::string>& args);
int run_logits(const std::vector<std::string>& args);
int run_scorecard(const std::vector<std::string>& args);  // the paper's eight claims measured here

int fail(const std::string& command, const std::string& message);  // prints and returns 1
// message with its line breaks as spaces: an error goes out as one stderr line even when it
// has newlines (a template's raise_exception text, a compiler's note).
std::string one_line(std::string message);

} // namespace cflow::cli
