// The cflow command line on CLI11 (app/cli/cli_parser.h): every command's --help lists its options,
// the defaults the commands relied on, values reaching their fields, and usage errors (unknown
// option, missing value, malformed or out-of-range numbers) as one line naming the option, with
// the exit codes the CLI has always used. The option lists below are written out by hand from the
// commands' documented options: a declaration dropped or renamed fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli_parser.h"
#include "cli_runner.h"
#include "synth_args.h"

namespace cflow::cli {
namespace {

const std::vector<std::string> kSampling = {"-n", "--n-predict", "--temp", "--top-k", "--top-p", "--min-p",
                                            "--repeat-penalty", "--repeat-last-n", "--seed"};
const std::vector<std::string> kSession = {"--threads", "--ctx", "--load", "--kv-cache", "--expert-fetch", "--cache-mib",
                                           "--io-backend"};

std::vector<std::string> join(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// Every command and the options it accepts.
const std::map<std::string, std::vector<std::string>>& expected_options() {
    static const std::map<std::string, std::vector<std::string>> options = {
        {"convert", {"-o", "--output", "--format", "--keep-every-type", "--quant", "--embedding-quant", "--attention-quant",
                     "--ffn-quant", "--expert-quant", "--output-quant", "--tokenizer", "--threads", "--validate",
                     "--sample", "--preflight", "--json", "--quiet"}},
        {"generate", join(join({"-p", "--prompt", "--stats", "--trace-experts", "--telemetry-file", "--no-stats",
                                "--context-policy", "--ignore-eos", "--grammar", "--json-schema", "--json-string-max-chars",
                                "--json-array-max-items", "--json-recursion-max-depth"},
                               kSampling),
                          kSession)},
        {"chat", join(join({"--system", "--template", "--context-policy", "--thinking", "--template-time", "--json-schema",
                            "--json-string-max-chars", "--json-array-max-items", "--json-recursion-max-depth", "--show-prompt"},
                           kSampling),
                      kSession)},
        {"serve", join({"--host", "--port", "--api-key", "--api-key-file", "--allowed-host", "--cors", "--parallel", "--queue", "--max-body-mib", "--template",
                        "--context-policy"},
                       kSession)},
        {"logits", {"-p", "--prompt", "--prompt-file", "--ids", "--top", "--out", "--isa", "--threads", "--ctx", "--load",
                    "--kv-cache", "--json"}},
        {"perplexity", {"-f", "--file", "--ctx", "--stride", "--max-tokens", "--threads", "--load", "--kv-cache", "--json",
                        "--progress"}},
        {"bench", {"--threads", "--tokens", "--warmup", "--prompt-tokens", "--kv-cache", "--json"}},
        {"bench experts", {"--threads", "--tokens", "--warmup", "--rounds", "--fetch-threads", "--cache-mib", "--io-backend",
                           "--json"}},
        {"scorecard", {"--json", "--quick", "--claim", "--threads", "--resources"}},
        {"inspect", {"--json"}},
        {"critical-path", {"--d", "--d-ff", "--layers", "--experts", "--top-k", "--expert-hidden", "--heads", "--kv-heads",
                           "--head-dim", "--dense-delay", "--expert-delay", "--shared-expert-hidden", "--combine-style",
                           "--blocks", "--iters", "--json"}},
        {"plan", {"--threads", "--ctx", "--load", "--kv-cache", "--expert-fetch", "--cache-mib", "--prompt-tokens", "--tokens",
                  "--calibration", "--calibrate", "--json"}},
        {"tokenize", {"--ids", "--pieces", "--parse-special", "--add-special"}},
        {"detokenize", {}},
        {"template", {"--template", "--messages", "--bos", "--eos", "--kwargs", "--tools", "--no-generation-prompt"}},
        {"synth", {"-o", "--output", "--gguf", "--preset", "--d", "--d-ff", "--layers", "--experts", "--top-k",
                   "--expert-hidden", "--heads", "--kv-heads", "--vocab", "--dense-delay", "--expert-delay",
                   "--combine-style", "--quant", "--seed", "--router-skew"}},
    };
    return options;
}

std::vector<std::string> words(const std::string& command_line) {
    std::vector<std::string> out;
    std::string word;
    for (char c : command_line + " ") {
        if (c != ' ') word += c;
        else if (!word.empty()) out.push_back(std::move(word)), word.clear();
    }
    return out;
}

// Parses on a fresh CommandLine (one parse each), keeping it for the fields.
struct Parsed {
    std::unique_ptr<CommandLine> line = std::make_unique<CommandLine>("9.9.9");
    ParseOutcome outcome;
    const CommandArgs& args() const { return line->args(); }
};

Parsed parse(const std::string& command_line) {
    Parsed p;
    p.outcome = p.line->parse(words(command_line));
    return p;
}

// The option as a word of the help text: "--top-k" must not be found inside "--top-k-ish" or "--top".
bool mentions_option(const std::string& help, const std::string& option) {
    const std::regex word("(^|[\\s,])" + std::regex_replace(option, std::regex("-"), "\\-") + "([\\s,=]|$)");
    return std::regex_search(help, word);
}

// A usage error: exit 1, nothing on stdout, one stderr line that names `needle` and points to the
// command's help.
void expect_usage_error(const std::string& command_line, const std::string& needle) {
    SCOPED_TRACE(command_line);
    const Parsed p = parse(command_line);
    ASSERT_TRUE(p.outcome.exit_code.has_value()) << "parsed as " << p.outcome.command;
    EXPECT_EQ(*p.outcome.exit_code, 1);
    EXPECT_TRUE(p.outcome.out.empty()) << p.outcome.out;
    EXPECT_EQ(std::count(p.outcome.err.begin(), p.outcome.err.end(), '\n'), 1) << p.outcome.err;
    EXPECT_NE(p.outcome.err.find(needle), std::string::npos) << p.outcome.err;
    const auto w = words(command_line);
    const std::string command = w.size() > 1 && w[0] == "bench" && w[1] == "experts" ? "bench experts" : w[0];
    EXPECT_NE(p.outcome.err.find("cflow " + command + " --help"), std::string::npos) << p.outcome.err;
}

TEST(CliParser, EveryCommandIsDeclaredAndTested) {
    CommandLine line;
    const auto names = line.command_names();
    std::set<std::string> declared(names.begin(), names.end()), tested;
    for (const auto& [command, options] : expected_options()) tested.insert(command);
    EXPECT_EQ(declared, tested);
}

TEST(CliParser, EveryCommandsHelpListsItsOptionsAndExitsZero) {
    for (const auto& [command, options] : expected_options()) {
        SCOPED_TRACE(command);
        const Parsed p = parse(command + " --help");
        ASSERT_TRUE(p.outcome.exit_code.has_value());
        EXPECT_EQ(*p.outcome.exit_code, 0);
        EXPECT_TRUE(p.outcome.err.empty()) << p.outcome.err;
        EXPECT_NE(p.outcome.out.find("Usage: cflow " + command + " [OPTIONS]"), std::string::npos) << p.outcome.out;
        for (const std::string& option : options) EXPECT_TRUE(mentions_option(p.outcome.out, option)) << option;
        // `cflow help CMD` is the same text; -h is --help.
        EXPECT_EQ(parse("help " + command).outcome.out, p.outcome.out);
        EXPECT_EQ(parse(command + " -h").outcome.out, p.outcome.out);
    }
}

TEST(CliParser, TopLevelHelpListsEveryCommand) {
    for (const char* form : {"--help", "-h", "help"}) {
        const Parsed p = parse(form);
        ASSERT_TRUE(p.outcome.exit_code.has_value());
        EXPECT_EQ(*p.outcome.exit_code, 0);
        for (const auto& [command, options] : expected_options())
            if (command.find(' ') == std::string::npos) {
                EXPECT_TRUE(mentions_option(p.outcome.out, command)) << command;
            }
        EXPECT_TRUE(mentions_option(p.outcome.out, "--version"));
    }
    // bench's help names its sub-command.
    EXPECT_NE(parse("bench --help").outcome.out.find("experts"), std::string::npos);
}

TEST(CliParser, HelpShowsEachCommandsOwnDefaults) {
    EXPECT_TRUE(mentions_option(parse("generate --help").outcome.out, "f16|f32=f16"));
    EXPECT_TRUE(mentions_option(parse("logits --help").outcome.out, "f16|f32=f32"));
    EXPECT_TRUE(mentions_option(parse("logits --help").outcome.out, "auto|map|read|lanes=map"));
    EXPECT_NE(parse("generate --help").outcome.out.find("-n,--n-predict N:[0, 16777216]=128"), std::string::npos);
    EXPECT_NE(parse("chat --help").outcome.out.find("-n,--n-predict N:[0, 16777216]=512"), std::string::npos);
    EXPECT_NE(parse("serve --help").outcome.out.find("=8080"), std::string::npos);
}

TEST(CliParser, DefaultsAreTheOnesTheCommandsHad) {
    const Parsed g = parse("generate");
    ASSERT_FALSE(g.outcome.exit_code.has_value()) << g.outcome.err;
    EXPECT_EQ(g.outcome.command, "generate");
    const GenerateArgs& ga = g.args().generate;
    EXPECT_TRUE(ga.positionals.empty());
    EXPECT_EQ(ga.sampling.max_tokens, 128);
    EXPECT_FLOAT_EQ(ga.sampling.sampling.temperature, 0.8f);
    EXPECT_EQ(ga.sampling.sampling.top_k, 40);
    EXPECT_FLOAT_EQ(ga.sampling.sampling.top_p, 0.95f);
    EXPECT_FLOAT_EQ(ga.sampling.sampling.min_p, 0.05f);
    EXPECT_FLOAT_EQ(ga.sampling.sampling.repeat_penalty, 1.0f);
    EXPECT_EQ(ga.sampling.sampling.repeat_last_n, 64);
    EXPECT_EQ(ga.sampling.seed, -1);
    EXPECT_EQ(ga.session.threads, 0u);
    EXPECT_EQ(ga.session.ctx, 0u);
    EXPECT_EQ(ga.session.load, "auto");
    EXPECT_EQ(ga.session.kv_cache, KvCacheType::F16);
    EXPECT_EQ(ga.session.expert_fetch, ExpertFetch::Mapped);
    EXPECT_FALSE(ga.session.cache_mib.has_value());
    EXPECT_EQ(ga.session.io_backend, IoBackend::Auto);
    EXPECT_FALSE(ga.stats || ga.trace_experts || ga.no_stats);

    const Parsed c = parse("chat m.cflow");
    EXPECT_EQ(c.args().chat.sampling.max_tokens, 512);
    EXPECT_EQ(c.args().chat.chat.context_policy, ContextPolicy::Stop);
    EXPECT_FALSE(c.args().chat.chat.thinking.has_value());
    EXPECT_FALSE(c.args().chat.chat.template_name.has_value());

    const Parsed l = parse("logits");
    EXPECT_EQ(l.args().logits.session.load, "map");
    EXPECT_EQ(l.args().logits.session.kv_cache, KvCacheType::F32);
    EXPECT_EQ(l.args().logits.top, 10);
    EXPECT_EQ(parse("perplexity m -f t").args().perplexity.session.kv_cache, KvCacheType::F32);

    const Parsed serve = parse("serve");
    const ServeArgs& s = serve.args().serve;
    EXPECT_EQ(s.host, "127.0.0.1");
    EXPECT_EQ(s.port, 8080);
    EXPECT_EQ(s.parallel, 1u);
    EXPECT_EQ(s.queue, 32u);
    EXPECT_EQ(s.max_body_mib, 8u);
    EXPECT_EQ(s.session.kv_cache, KvCacheType::F16);

    const Parsed bench = parse("bench m");
    const BenchArgs& b = bench.args().bench;
    EXPECT_EQ(b.tokens, 64);
    EXPECT_EQ(b.warmup, 8);
    EXPECT_EQ(b.prompt_tokens, 64);
    EXPECT_EQ(b.session.kv_cache, KvCacheType::F16);
    const Parsed x = parse("bench experts m");
    EXPECT_EQ(x.outcome.command, "bench experts");
    EXPECT_EQ(x.args().bench_experts.tokens, 32);
    EXPECT_EQ(x.args().bench_experts.warmup, 4);
    EXPECT_EQ(x.args().bench_experts.rounds, 4);
    EXPECT_EQ(x.args().bench_experts.fetch_threads, 2);
    EXPECT_EQ(parse("synth").args().synth.seed, 1);
    EXPECT_EQ(parse("scorecard").args().scorecard.claim, 0);
}

TEST(CliParser, ValuesReachTheirFields) {
    const Parsed g = parse(
        "generate m.cflow -p -hello -n 5 --temp 0 --top-k 3 --top-p 0.5 --min-p 0 --repeat-penalty 1.1 --repeat-last-n 8 "
        "--seed -1 --threads 3 --ctx 100 --load read --kv-cache f32 --expert-fetch staged --cache-mib fit "
        "--io-backend threads --stats --trace-experts --telemetry-file t.jsonl --no-stats --grammar g.gbnf");
    ASSERT_FALSE(g.outcome.exit_code.has_value()) << g.outcome.err;
    const GenerateArgs& a = g.args().generate;
    EXPECT_EQ(a.positionals, std::vector<std::string>{"m.cflow"});
    EXPECT_EQ(a.prompt, "-hello");  // a value may start with '-'
    EXPECT_EQ(a.sampling.max_tokens, 5);
    EXPECT_FLOAT_EQ(a.sampling.sampling.temperature, 0.0f);
    EXPECT_EQ(a.sampling.sampling.top_k, 3);
    EXPECT_FLOAT_EQ(a.sampling.sampling.top_p, 0.5f);
    EXPECT_FLOAT_EQ(a.sampling.sampling.repeat_penalty, 1.1f);
    EXPECT_EQ(a.sampling.sampling.repeat_last_n, 8);
    EXPECT_EQ(a.sampling.seed, -1);
    EXPECT_EQ(a.session.threads, 3u);
    EXPECT_EQ(a.session.ctx, 100u);
    EXPECT_EQ(a.session.load, "read");
    EXPECT_EQ(a.session.kv_cache, KvCacheType::F32);
    EXPECT_EQ(a.session.expert_fetch, ExpertFetch::Staged);
    ASSERT_TRUE(a.session.cache_mib.has_value());
    EXPECT_TRUE(a.session.cache_mib->fit);
    EXPECT_EQ(a.session.io_backend, IoBackend::Threads);
    EXPECT_TRUE(a.stats && a.trace_experts && a.no_stats);
    EXPECT_EQ(a.telemetry_file, "t.jsonl");
    EXPECT_EQ(a.grammar_file, "g.gbnf");

    // The long spellings and --opt=value; an option given twice keeps the last value.
    const Parsed g2 = parse("generate --n-predict=7 --prompt=hi --seed 42 --threads 2 --threads 4 --cache-mib 64");
    ASSERT_FALSE(g2.outcome.exit_code.has_value()) << g2.outcome.err;
    EXPECT_EQ(g2.args().generate.sampling.max_tokens, 7);
    EXPECT_EQ(g2.args().generate.prompt, "hi");
    EXPECT_EQ(g2.args().generate.sampling.resolved().sampling.seed, 42u);
    EXPECT_EQ(g2.args().generate.session.threads, 4u);
    ASSERT_TRUE(g2.args().generate.session.cache_mib.has_value());
    EXPECT_EQ(g2.args().generate.session.cache_mib->mib, 64u);

    const Parsed chat =
        parse("chat --system be-brief --template chatml --context-policy sliding-window --thinking off --show-prompt");
    const ChatCommandArgs& c = chat.args().chat;
    EXPECT_EQ(c.system, std::optional<std::string>("be-brief"));
    EXPECT_EQ(c.chat.template_name, std::optional<std::string>("chatml"));
    EXPECT_EQ(c.chat.context_policy, ContextPolicy::SlidingWindow);
    EXPECT_EQ(c.chat.thinking, std::optional<bool>(false));
    EXPECT_TRUE(c.show_prompt);
    EXPECT_EQ(parse("chat --thinking on").args().chat.chat.thinking, std::optional<bool>(true));
    {
        const auto clock = parse("chat --template-time 2024-02-29T23:59:60").args().chat.chat.template_time;
        ASSERT_TRUE(clock.has_value());
        EXPECT_EQ(clock->year, 2024);
        EXPECT_EQ(clock->month, 2);
        EXPECT_EQ(clock->day, 29);
        EXPECT_EQ(clock->hour, 23);
        EXPECT_EQ(clock->second, 60);
        EXPECT_EQ(parse("chat --template-time 2025-03-07").args().chat.chat.template_time->hour, 0);
    }

    // One command per run: a later word naming another command is a positional (a file called "chat").
    const Parsed i = parse("inspect chat");
    EXPECT_EQ(i.outcome.command, "inspect");
    EXPECT_EQ(i.args().inspect.positionals, std::vector<std::string>{"chat"});
    EXPECT_TRUE(i.args().chat.positionals.empty());

    const Parsed cp = parse("critical-path m.cflow --d 512 --blocks 2 --json");
    EXPECT_EQ(cp.args().critical_path.given_geometry, (std::vector<std::string>{"--d", "--blocks"}));
    EXPECT_TRUE(cp.args().critical_path.json);
    EXPECT_FALSE(cp.args().critical_path.heads.has_value());

    const Parsed convert = parse("convert src -o out.vflow --attention-quant q8_0 --preflight --json");
    const ConvertArgs& v = convert.args().convert;
    EXPECT_EQ(v.output, std::optional<std::string>("out.vflow"));
    EXPECT_EQ(v.attention_quant, std::optional<std::string>("q8_0"));
    EXPECT_FALSE(v.quant.has_value());
    EXPECT_TRUE(v.preflight && v.json);
}

TEST(CliParser, UnknownOptionsAndMissingValuesAreUsageErrors) {
    expect_usage_error("generate --bogus", "unknown option --bogus");
    expect_usage_error("bench experts m --prompt-tokens 4", "unknown option --prompt-tokens");  // bench's, not experts'
    expect_usage_error("serve --thinking on", "unknown option --thinking");                    // chat's only
    expect_usage_error("generate --threads", "option --threads needs a value");
    expect_usage_error("chat -p", "unknown option -p");
    expect_usage_error("logits -p", "option --prompt needs a value");
    expect_usage_error("synth --d", "option --d needs a value");
    expect_usage_error("synth extra -o x.cflow", "unexpected argument 'extra'");  // synth and scorecard take no positionals
    expect_usage_error("scorecard 5", "unexpected argument '5'");
}

TEST(CliParser, MalformedAndOutOfRangeValuesNameTheOption) {
    expect_usage_error("generate --threads abc", "--threads: 'abc' is not an integer");
    expect_usage_error("generate --threads 1025", "--threads: 1025 is out of range [0, 1024]");
    expect_usage_error("generate --threads 0x10", "--threads: '0x10' is not an integer");
    expect_usage_error("generate --threads 1.5", "--threads: '1.5' is not an integer");
    expect_usage_error("generate -n many", "--n-predict: 'many' is not an integer");
    expect_usage_error("generate --temp nan", "--temp: 'nan' is not a number");
    expect_usage_error("generate --top-p 2", "--top-p: 2 is out of range [0, 1]");
    expect_usage_error("generate --seed -2", "--seed: -2 is out of range");
    expect_usage_error("serve --port 65536", "--port: 65536 is out of range [0, 65535]");
    expect_usage_error("bench m --prompt-tokens 0", "--prompt-tokens: 0 is out of range [1, 100000]");
    expect_usage_error("scorecard --claim 9", "--claim: 9 is out of range [0, 8]");
    expect_usage_error("critical-path --top-k many", "--top-k: 'many' is not an integer");
    expect_usage_error("synth --router-skew 65", "--router-skew: 65 is out of range [0, 64]");
    // Named values keep the messages the commands gave before.
    expect_usage_error("generate --kv-cache q8", "--kv-cache must be 'f32' or 'f16' (got 'q8')");
    expect_usage_error("bench m --kv-cache bf16", "--kv-cache must be 'f32' or 'f16' (got 'bf16')");
    expect_usage_error("generate --load maybe", "--load must be 'auto', 'map', 'read' or 'lanes' (got 'maybe')");
    expect_usage_error("chat --expert-fetch paged", "--expert-fetch must be 'mapped', 'sync' or 'staged'");
    expect_usage_error("bench experts m --cache-mib -1", "--cache-mib must be a whole number of MiB");
    expect_usage_error("generate --io-backend fast", "--io-backend must be 'auto', 'uring', 'overlapped' or 'threads'");
    expect_usage_error("chat --thinking maybe", "--thinking 'maybe': expected on or off");
    expect_usage_error("chat --template-time 2025-02-29", "--template-time '2025-02-29': expected YYYY-MM-DD");
    expect_usage_error("chat --template-time yesterday", "--template-time 'yesterday': expected YYYY-MM-DD");
    expect_usage_error("serve --template-time 2025-03-07", "unknown option --template-time");  // chat's only
    expect_usage_error("serve --context-policy oldest", "--context-policy 'oldest': expected stop, drop-oldest or sliding-window");
    expect_usage_error("convert s -o o --attention-quant q9", "--attention-quant must be q4_k, q5_k, q6_k, q4_0, q8_0, f16 or f32");
    expect_usage_error("convert s -o o --format zip", "--format must be cflow or vflow");
    expect_usage_error("logits --isa fast", "--isa must be one of scalar");
    expect_usage_error("synth --quant q2", "option --quant: 'q2' is not q4_0, q8_0, q4_k_m, q4_1, q5_0, q5_1 or iq4_nl");
    expect_usage_error("synth --preset big", "option --preset: 'big' is not one of dense-1b, moe-1b, llama3.2-1b, qwen3-moe");
    // Every listed preset is one synth knows.
    for (const char* name : {"dense-1b", "moe-1b", "llama3.2-1b", "qwen3-moe"}) EXPECT_TRUE(is_synth_preset(name)) << name;
    expect_usage_error("critical-path --combine-style Diagonal", "option --combine-style: 'Diagonal' is not 0-6");
}

TEST(CliParser, NoCommandUnknownCommandAndVersion) {
    const Parsed none = parse("");
    ASSERT_TRUE(none.outcome.exit_code.has_value());
    EXPECT_EQ(*none.outcome.exit_code, 2);
    EXPECT_TRUE(none.outcome.out.empty());
    EXPECT_NE(none.outcome.err.find("Usage: cflow"), std::string::npos);  // the help, on stderr

    for (const char* line : {"frobnicate", "help frobnicate", "--bogus"}) {
        const Parsed p = parse(line);
        ASSERT_TRUE(p.outcome.exit_code.has_value()) << line;
        EXPECT_EQ(*p.outcome.exit_code, 2) << line;
        EXPECT_NE(p.outcome.err.find("unknown command"), std::string::npos) << p.outcome.err;
    }
    const Parsed v = parse("--version");
    EXPECT_EQ(v.outcome.exit_code, std::optional<int>(0));
    EXPECT_EQ(v.outcome.out, "cflow 9.9.9\n");
    EXPECT_EQ(parse("--version now").outcome.exit_code, std::optional<int>(2));
}

// The same contract through the built executable: help on stdout with exit 0, a usage error as one
// stderr line with exit 1.
TEST(CliParser, TheExecutableExitsWithTheParsersCodes) {
    const auto help = test::run_cflow({"convert", "--help"});
    EXPECT_EQ(help.exit_code, 0) << help.err;
    EXPECT_TRUE(mentions_option(help.out, "--keep-every-type")) << help.out;
    const auto help_cmd = test::run_cflow({"help", "logits"});
    EXPECT_EQ(help_cmd.exit_code, 0) << help_cmd.err;
    EXPECT_TRUE(mentions_option(help_cmd.out, "--kv-cache")) << help_cmd.out;
    const auto bad = test::run_cflow({"logits", "--top", "x"});
    EXPECT_EQ(bad.exit_code, 1);
    test::expect_one_line_failure(bad, "--top: 'x' is not an integer");
    const auto missing = test::run_cflow({"generate", "--ctx"});
    EXPECT_EQ(missing.exit_code, 1);
    test::expect_one_line_failure(missing, "option --ctx needs a value");
}

} // namespace
} // namespace cflow::cli
