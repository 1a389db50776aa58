#pragma once
// What each cflow command's options parse into: the parser (cli_parser.cpp) declares every option
// bound to one of these fields, with its default (the field's initial value), help text and
// validation; the commands (cmd_*.cpp) read only these structs. std::optional fields are options
// whose absence matters (a fallback that depends on other options, or "given" vs "not given").
#include <optional>
#include <string>
#include <vector>

#include "chat_args.h"
#include "sampling_args.h"
#include "session_args.h"

namespace cflow::cli {

struct ConvertArgs {
    std::vector<std::string> positionals;  // SRC
    std::optional<std::string> output;     // -o/--output
    std::optional<std::string> quant, embedding_quant, attention_quant, ffn_quant, expert_quant, output_quant;
    std::string tokenizer;
    unsigned threads = 0;
    std::optional<std::string> format;     // cflow|vflow; absent: from the output's extension
    std::optional<std::string> sample;     // --sample FILE for --validate
    bool quiet = false, preflight = false, validate = false, json = false, keep_every_type = false;
};

struct GenerateArgs {
    std::vector<std::string> positionals;  // [MODEL]
    std::string prompt;
    SamplingArgs sampling;
    SessionArgs session;
    std::string telemetry_file;
    std::string grammar_file;  // --grammar: a GBNF file the output must match; empty: none
    JsonSchemaArgs json_schema;  // --json-schema: the output is JSON valid under a schema (not with --grammar)
    bool stats = false, trace_experts = false, no_stats = false;
    ContextPolicy context_policy = ContextPolicy::Stop;  // not Stop: a full context shifts and generation goes on
    bool ignore_eos = false;                              // run past EOS / BOS (benchmarks, long-context tests)
};

struct ChatCommandArgs {
    std::vector<std::string> positionals;  // [MODEL]
    std::optional<std::string> system;
    SamplingArgs sampling;
    SessionArgs session;
    ChatArgs chat;
    JsonSchemaArgs json_schema;  // --json-schema: every reply is JSON valid under a schema
    bool show_prompt = false;
    RemoteChatArgs remote;       // --endpoint: replies from an OpenAI-compatible server instead
};

struct ServeArgs {
    std::vector<std::string> positionals;  // [MODEL]
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string api_key;
    std::string api_key_file;
    std::vector<std::string> allowed_hosts;
    std::vector<std::string> cors_origins;
    unsigned parallel = 1;
    unsigned queue = 32;
    unsigned max_body_mib = 8;
    unsigned max_connections = 512;
    unsigned max_connections_per_client = 64;
    unsigned header_timeout_s = 10;
    unsigned body_timeout_s = 60;
    SessionArgs session;
    ChatArgs chat;
};

struct LogitsArgs {
    std::vector<std::string> positionals;  // [MODEL]
    std::optional<std::string> prompt, prompt_file, ids, out, isa;
    int top = 10;
    SessionArgs session;  // --threads, --ctx, --load (default map), --kv-cache (default f32)
    bool json = false;
};

struct PerplexityArgs {
    std::vector<std::string> positionals;  // MODEL
    std::optional<std::string> file;       // -f/--file
    uint32_t stride = 0;
    long long max_tokens = 0;
    SessionArgs session;  // --threads, --ctx, --load, --kv-cache (default f32)
    bool json = false, progress = false;
    bool llama_chunks = false;  // --llama-chunks: llama-perplexity's counting instead of documents
};

struct BenchArgs {
    std::vector<std::string> positionals;  // MODEL
    int tokens = 64, warmup = 8, prompt_tokens = 64;
    SessionArgs session;  // --threads, --kv-cache
    bool json = false;
};

struct BenchExpertsArgs {
    std::vector<std::string> positionals;  // MODEL
    int tokens = 32, warmup = 4, rounds = 4, fetch_threads = 2;
    SessionArgs session;  // --threads, --cache-mib, --io-backend
    bool json = false;
};

struct ScorecardArgs {
    unsigned threads = 0;
    std::optional<std::string> resources;
    int claim = 0;
    bool json = false, quick = false;
};

struct InspectArgs {
    std::vector<std::string> positionals;  // MODEL
    bool json = false;
};

// plan's options: the settings a prediction is for (SessionArgs: --threads, --ctx, --load,
// --kv-cache, --expert-fetch, --cache-mib), the prompt and reply it is for, the calibration.
struct PlanArgs {
    std::vector<std::string> positionals;  // MODEL
    SessionArgs session;
    int prompt_tokens = 64, tokens = 64;   // as cflow bench's defaults, so the figures compare
    std::optional<std::string> calibration;  // --calibration FILE: a stored calibration to use instead of this machine's
    bool json = false, calibrate = false;
};

// critical-path's geometry options; absent ones take fallbacks that depend on the others.
struct CriticalPathArgs {
    std::vector<std::string> positionals;  // [MODEL]
    std::optional<long long> d, d_ff, layers, experts, top_k, expert_hidden, heads, kv_heads, head_dim, dense_delay,
        expert_delay, shared_expert_hidden, blocks, iters;
    std::optional<std::string> combine_style;
    bool json = false;
    // The geometry options given, by name, filled by the parser (refused with MODEL: the header
    // gives the geometry).
    std::vector<std::string> given_geometry;
};

struct TokenizeArgs {
    std::vector<std::string> positionals;  // MODEL_OR_VOCAB
    bool ids = false, pieces = false, parse_special = false, add_special = false;
};

struct DetokenizeArgs {
    std::vector<std::string> positionals;  // MODEL_OR_VOCAB
};

struct TemplateArgs {
    std::vector<std::string> positionals;  // [MODEL]
    std::optional<std::string> template_file, messages, bos, eos, kwargs, tools;
    bool no_generation_prompt = false;
};

// synth's options: a preset's geometry, overridden by the ones given.
struct SynthArgs {
    std::optional<std::string> output, gguf, preset, quant, combine_style;
    std::optional<long long> d, d_ff, layers, experts, top_k, expert_hidden, heads, kv_heads, vocab, dense_delay,
        expert_delay;
    long long seed = 1;
    double router_skew = 0.0;
};

// Every command's arguments; the parser fills the one the command line names.
struct CommandArgs {
    ConvertArgs convert;
    GenerateArgs generate;
    ChatCommandArgs chat;
    ServeArgs serve;
    LogitsArgs logits;
    PerplexityArgs perplexity;
    BenchArgs bench;
    BenchExpertsArgs bench_experts;
    ScorecardArgs scorecard;
    InspectArgs inspect;
    CriticalPathArgs critical_path;
    PlanArgs plan;
    TokenizeArgs tokenize;
    DetokenizeArgs detokenize;
    TemplateArgs template_;
    SynthArgs synth;
};

} // namespace cflow::cli
