// The cflow command line declared once: every command and option with its default, help text and
// validation (cli_options.h, session_args.h, sampling_args.h, chat_args.h), parsed with CLI11.
#include "cli_parser.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/dtype.h"
#include "cli_options.h"
#include "combine_style_arg.h"
#include "cflow/formats/synth/synth_spec.h"

namespace cflow::cli {
namespace {

constexpr long long kMaxGeometryDim = 1LL << 24;  // critical-path: far above any real geometry, exact in double
constexpr long long kMaxSynthDim = 65536;         // synth: the widest input a .cflow tile can address
constexpr long long kMaxSynthExperts = 254;       // TileHeader.expert_id is 8-bit, 255 means "no expert"

template <class T>
CLI::Option* add_integer(CLI::App& app, const std::string& name, T& target, long long lo, long long hi,
                         const std::string& help, const std::string& type = "N") {
    return app.add_option(name, target, help)->check(integer_in(lo, hi))->type_name(type)->capture_default_str();
}

template <class T>
CLI::Option* add_optional_integer(CLI::App& app, const std::string& name, std::optional<T>& target, long long lo,
                                  long long hi, const std::string& help, const std::string& type = "N") {
    return app.add_option(name, target, help)->check(integer_in(lo, hi))->type_name(type);
}

CLI::Option* add_flag(CLI::App& app, const std::string& name, bool& target, const std::string& help) {
    return app.add_flag(name, target, help);
}

CLI::App* add_command(CLI::App& root, const std::string& name, const std::string& summary, const std::string& details) {
    CLI::App* app = root.add_subcommand(name, summary);
    if (!details.empty()) app->footer(details);
    return app;
}

// convert's --*quant values: a quantisation target (Q2_K, Q3_K, IQ4_XS, Q4_1, Q5_0, Q5_1 and IQ4_NL
// tiles exist only as a GGUF's own blocks, kept).
CLI::Option* add_quant_option(CLI::App& app, const std::string& name, std::optional<std::string>& target,
                              const std::string& help) {
    return app.add_option(name, target, help)
        ->check(text_check(
            [](const std::string& v) {
                const auto t = parse_dtype(v);
                return t && is_quantisation_target(*t);
            },
            [name](const std::string& v) {
                return name + " must be q4_k, q5_k, q6_k, q4_0, q8_0, f16 or f32 (got '" + v + "')";
            }))
        ->type_name("Q");
}

CLI::Validator combine_style_check() {
    return text_check([](const std::string& v) { return bool(parse_combine_style(v)); },
                      [](const std::string& v) { return parse_combine_style(v).error(); });
}

void declare_convert(CLI::App& root, ConvertArgs& a) {
    CLI::App* c = add_command(
        root, "convert", "convert a checkpoint (Hugging Face folder, GGUF, llama2.c) to .cflow or .vflow",
        "SRC: a Hugging Face model folder, a .gguf file (F32/F16/BF16, Q4_0/Q4_1/Q5_0/Q5_1/Q8_0, Q2_K..Q8_K,\n"
        "IQ4_NL, IQ4_XS, MXFP4), or a llama2.c .bin (with --tokenizer tokenizer.bin).\n"
        "--preflight only reports (architecture, parameters, tokenizer, output size per quantisation, disk,\n"
        "memory, decode speed here; exit 2 when it cannot be converted); --validate checks the result against\n"
        "the source in F32 (tokenizer, template, smoke generation, top-1 agreement, KL) and saves\n"
        "OUT.report.json / OUT.report.md beside it (exit 3 on a failed verdict).\n"
        "A GGUF keeps its quantised matrices' own types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, the K-quants, IQ4_NL, IQ4_XS\n"
        "and MXFP4 re-tiled bit for bit, and the F16/F32 matrices a quantised file leaves unquantised stay so;\n"
        "an unquantised file's matrices get --quant, default q4_0) unless a --*quant option asks to\n"
        "re-quantise everything.");
    c->add_option("SRC", a.positionals, "the checkpoint to convert")->type_name("PATH");
    c->add_option("-o,--output", a.output, "the output file (.vflow: the vflow container unless --format says otherwise)")
        ->type_name("OUT.cflow|OUT.vflow");
    c->add_option("--format", a.format, "the container (default: from the output's extension)")
        ->check(text_check([](const std::string& v) { return v == "cflow" || v == "vflow"; },
                           [](const std::string& v) { return "--format must be cflow or vflow (got '" + v + "')"; }))
        ->type_name("cflow|vflow");
    add_flag(*c, "--keep-every-type", a.keep_every_type,
             "keep every GGUF block type as it is (the default now that every type has int8 kernels)");
    add_quant_option(*c, "--quant", a.quant, "re-quantise every weight matrix to Q (q4_k|q5_k|q6_k|q4_0|q8_0|f16|f32)");
    add_quant_option(*c, "--embedding-quant", a.embedding_quant, "the token embedding's type");
    add_quant_option(*c, "--attention-quant", a.attention_quant, "the attention matrices' type");
    add_quant_option(*c, "--ffn-quant", a.ffn_quant, "the dense FFN matrices' type");
    add_quant_option(*c, "--expert-quant", a.expert_quant, "the experts' matrices' type");
    add_quant_option(*c, "--output-quant", a.output_quant, "the LM head's type");
    c->add_option("--tokenizer", a.tokenizer, "the tokenizer of a llama2.c checkpoint (tokenizer.bin)")->type_name("FILE");
    add_threads_option(*c, a.threads);
    add_flag(*c, "--validate", a.validate, "check the result against the source and write OUT.report.json/.md");
    c->add_option("--sample", a.sample, "with --validate: the text the validation runs on")->type_name("TEXT");
    add_flag(*c, "--preflight", a.preflight, "only report whether and how SRC converts (-o optional)");
    add_flag(*c, "--json", a.json, "with --preflight: the report as JSON");
    add_flag(*c, "--quiet", a.quiet, "no progress on stderr");
}

void declare_generate(CLI::App& root, GenerateArgs& a) {
    CLI::App* c = add_command(
        root, "generate", "generate text from a prompt",
        "Prints the prompt and the generated text on stdout, statistics on stderr. Without MODEL: the bundled\n"
        "default model (default-model.cflow beside cflow or in ../share/cflow-studio).\n"
        "--kv-cache: f16 (the default of generate, chat, serve and bench) halves the KV cache's memory, f32 keeps\n"
        "it exact (the default of logits and perplexity).");
    c->add_option("MODEL", a.positionals, "the .cflow/.vflow model (default: the bundled model)")->type_name("FILE");
    c->add_option("-p,--prompt", a.prompt, "the prompt")->type_name("PROMPT");
    a.sampling.max_tokens = 128;
    add_sampling_options(*c, a.sampling);
    add_session_options(*c, a.session, kSessionAll);
    add_flag(*c, "--stats", a.stats, "per-token statistics, one JSON object per step on stderr (or --telemetry-file)");
    add_flag(*c, "--trace-experts", a.trace_experts, "per-token routed experts in the same JSON lines");
    c->add_option("--telemetry-file", a.telemetry_file, "write the --stats/--trace-experts lines to FILE")->type_name("FILE");
    add_flag(*c, "--no-stats", a.no_stats, "no summary lines on stderr after the text");
    add_context_policy_option(*c, a.context_policy);
    add_flag(*c, "--ignore-eos", a.ignore_eos, "keep generating past the end-of-generation token");
    c->add_option("--grammar", a.grammar_file,
                  "only output that matches the GBNF grammar in FILE (llama.cpp's syntax, starting at root); "
                  "generation stops when it is complete")
        ->type_name("FILE");
    add_json_schema_options(*c, a.json_schema);
}

void declare_perplexity(CLI::App& root, PerplexityArgs& a) {
    CLI::App* c = add_command(
        root, "perplexity", "perplexity of a text file with the model's own tokenizer",
        "Documents split at <|endoftext|> (else at blank lines), each BOS text EOS; windows of --ctx tokens\n"
        "(default: the model's context) advanced by --stride (default --ctx); every token after the first\n"
        "scored once. --llama-chunks counts as llama.cpp's llama-perplexity does (same -c = --ctx), so the\n"
        "two tools print one number for one file.");
    c->add_option("MODEL", a.positionals, "the .cflow/.vflow model")->type_name("FILE");
    c->add_option("-f,--file", a.file, "the text file to score")->type_name("TEXT");
    a.session.kv_cache = KvCacheType::F32;
    add_session_options(*c, a.session, kSessionContext | kSessionLoad | kSessionKvCache);
    add_integer(*c, "--stride", a.stride, 0, 1 << 24, "tokens each window advances (0: --ctx)");
    add_integer(*c, "--max-tokens", a.max_tokens, 0, 1LL << 40, "score at most N tokens (0: all)");
    add_flag(*c, "--llama-chunks", a.llama_chunks,
             "llama-perplexity's recipe: the whole text with one BOS, --ctx-token chunks each starting with BOS, "
             "the second half of each chunk scored");
    add_flag(*c, "--json", a.json, "the result as one JSON object");
    add_flag(*c, "--progress", a.progress, "progress on stderr");
}

void declare_bench(CLI::App& root, BenchArgs& a, BenchExpertsArgs& e) {
    CLI::App* c = add_command(
        root, "bench", "prefill and decode speed of a model against the measured read bandwidth",
        "Prefill speed over a P-token prompt (batched) and decode speed, from a file mapping, from anonymous\n"
        "memory and from the lanes layout, vs the read bandwidth measured in the same run.\n"
        "`cflow bench experts MODEL` compares the expert-fetch arms (cflow bench experts --help).");
    c->add_option("MODEL", a.positionals, "the .cflow/.vflow model")->type_name("FILE");
    add_session_options(*c, a.session, kSessionKvCache);
    add_integer(*c, "--prompt-tokens", a.prompt_tokens, 1, 100000, "prompt length P for the prefill");
    add_integer(*c, "--tokens", a.tokens, 1, 100000, "decode tokens timed");
    add_integer(*c, "--warmup", a.warmup, 0, 100000, "decode tokens before timing");
    add_flag(*c, "--json", a.json, "one JSON object on one line");
    c->require_subcommand(0, 1);

    CLI::App* x = add_command(
        *c, "experts", "the expert-fetch arms mapped, sync and staged alternated on a MoE model",
        "Per arm: tok/s, compute, stall and I/O ms/token, and staged's predicted speedup over sync,\n"
        "(C+IO)/max(C,IO), next to the measured one (JSON: one line per arm). --cache-mib gives sync and staged\n"
        "a RAM expert cache each (fit: half of fit's size each, as both are held at once): hit rate, expert\n"
        "bytes read and saved per token; --io-backend: how sync and staged read (each line names the backend\n"
        "that ran, io_backend; the sync line its read bandwidth).");
    x->add_option("MODEL", e.positionals, "the .cflow/.vflow MoE model")->type_name("FILE");
    add_threads_option(*x, e.session.threads);
    add_integer(*x, "--tokens", e.tokens, 1, 100000, "decode tokens timed per arm");
    add_integer(*x, "--warmup", e.warmup, 0, 100000, "decode tokens before timing");
    add_integer(*x, "--rounds", e.rounds, 1, 1000, "rounds the arms alternate over");
    add_integer(*x, "--fetch-threads", e.fetch_threads, 1, 64, "reader threads of sync and staged");
    add_expert_cache_options(*x, e.session);
    add_flag(*x, "--json", e.json, "one JSON line per arm");
}

void declare_chat(CLI::App& root, ChatCommandArgs& a) {
    CLI::App* c = add_command(
        root, "chat", "interactive chat through the model's chat template",
        "Reads stdin line by line; /reset, /system TEXT, /quit; Ctrl-C stops a reply, Ctrl-D exits.\n"
        "Without MODEL: the bundled default model. --endpoint URL: the replies come from an OpenAI-compatible\n"
        "server instead (its sampling options are sent; the template is the server's).");
    c->add_option("MODEL", a.positionals, "the .cflow/.vflow model (default: the bundled model)")->type_name("FILE");
    c->add_option("--system", a.system, "the system prompt")->type_name("TEXT");
    a.sampling.max_tokens = 512;
    add_sampling_options(*c, a.sampling);
    add_session_options(*c, a.session, kSessionAll);
    add_chat_options(*c, a.chat, /*with_thinking=*/true);
    add_json_schema_options(*c, a.json_schema);
    add_flag(*c, "--show-prompt", a.show_prompt, "print each turn's rendered prompt on stderr");
    add_remote_chat_options(*c, a.remote);
}

void declare_serve(CLI::App& root, ServeArgs& a) {
    CLI::App* c = add_command(
        root, "serve", "a local OpenAI-compatible server",
        "GET /v1/models, POST /v1/chat/completions, POST /v1/completions (stream: true as server-sent events);\n"
        "--parallel sessions answer at once, --queue more wait; binds 127.0.0.1 unless --host says otherwise;\n"
        "without MODEL: the bundled default model; --cache-mib is the whole server's expert cache, shared out\n"
        "equally between the --parallel slots. Ctrl-C stops.");
    c->add_option("MODEL", a.positionals, "the .cflow/.vflow model (default: the bundled model)")->type_name("FILE");
    c->add_option("--host", a.host, "the address to listen on")->type_name("HOST")->capture_default_str();
    add_integer(*c, "--port", a.port, 0, 65535, "the port (0: any free one)", "PORT");
    c->add_option("--api-key", a.api_key,
                  "require this bearer token (visible to other users in the process list: prefer CFLOW_API_KEY or --api-key-file)")
        ->type_name("KEY");
    c->add_option("--api-key-file", a.api_key_file, "require the bearer token in FILE's first line")->type_name("FILE");
    c->add_option("--allowed-host", a.allowed_hosts,
                  "also answer requests sent to this host name (IP addresses and localhost always are); repeatable")
        ->type_name("NAME");
    c->add_option("--cors", a.cors_origins,
                  "answer browser requests from this origin (scheme://host[:port], or * for any); repeatable")
        ->type_name("ORIGIN");
    add_integer(*c, "--parallel", a.parallel, 1, 64, "requests answered at once (one session each)");
    add_integer(*c, "--queue", a.queue, 0, 4096, "requests that may wait for a slot");
    add_integer(*c, "--max-body-mib", a.max_body_mib, 1, 1024, "the largest request body in MiB");
    add_integer(*c, "--max-connections", a.max_connections, 8, 4096, "connections open at once, of all clients");
    add_integer(*c, "--max-connections-per-client", a.max_connections_per_client, 1, 4096,
                "connections open at once from one address");
    add_integer(*c, "--header-timeout", a.header_timeout_s, 1, 600, "seconds a request head may take to arrive", "S");
    add_integer(*c, "--body-timeout", a.body_timeout_s, 1, 3600, "seconds a request body may take to arrive", "S");
    add_session_options(*c, a.session, kSessionAll, "worker threads per slot (0: the cores shared out between the slots)");
    add_chat_options(*c, a.chat, /*with_thinking=*/false);
}

void declare_logits(CLI::App& root, LogitsArgs& a) {
    CLI::App* c = add_command(
        root, "logits", "the next-token logits after a prompt",
        "The prompt is tokenised as tokenize --add-special does; prints the top N ids, logits and\n"
        "probabilities; --out writes the whole vector as raw little-endian float32 (vocab_size values,\n"
        "nothing else); --isa scalar is the f32 reference path. Without MODEL: the bundled default model.");
    c->add_option("MODEL", a.positionals, "the .cflow/.vflow model (default: the bundled model)")->type_name("FILE");
    c->add_option("-p,--prompt", a.prompt, "the prompt")->type_name("PROMPT");
    c->add_option("--prompt-file", a.prompt_file, "read the prompt from FILE (excludes -p)")->type_name("FILE");
    c->add_option("--ids", a.ids, "the prompt as token ids instead (comma or space separated)")->type_name("IDS");
    add_integer(*c, "--top", a.top, 0, 1 << 24, "how many of the most likely tokens to list");
    c->add_option("--out", a.out, "write the whole logit vector as raw float32")->type_name("FILE.f32");
    c->add_option("--isa", a.isa, "the kernel path")
        ->check(text_check([](const std::string& v) { return parse_isa(v).has_value(); },
                           [](const std::string& v) {
                               return "--isa must be one of scalar, avx2, avx512, avx512vnni, avx2int8, avxvnni (got '" +
                                      v + "')";
                           }))
        ->type_name("scalar|avx2|avx512|avx512vnni|avx2int8|avxvnni");
    a.session.load = "map";  // the reference tool: the file layout unless asked (lanes differ by f32 reassociation)
    a.session.kv_cache = KvCacheType::F32;
    add_session_options(*c, a.session, kSessionContext | kSessionLoad | kSessionKvCache);
    add_flag(*c, "--json", a.json, "the result as one JSON object");
}

void declare_scorecard(CLI::App& root, ScorecardArgs& a) {
    CLI::App* c = add_command(
        root, "scorecard", "the paper's eight claims measured on this machine",
        "Figures, method and verdict (proven, refuted, inconclusive, not measurable here) per claim, then\n"
        "Table 4.1 from DIR/training/RESULTS.md (DIR: the folder with default-model.cflow and models/; default:\n"
        "the bundled model's); synthetic models are generated in a temporary folder.");
    add_flag(*c, "--json", a.json, "one JSON array of the claim objects");
    add_flag(*c, "--quick", a.quick, "smaller synthetic models, fewer tokens");
    add_integer(*c, "--claim", a.claim, 0, 8, "measure only claim N (0: all)");
    add_threads_option(*c, a.threads);
    c->add_option("--resources", a.resources, "the folder with default-model.cflow, models/ and training/")
        ->type_name("DIR");
}

void declare_inspect(CLI::App& root, InspectArgs& a) {
    CLI::App* c = add_command(root, "inspect", "header, geometry, segments, metadata and file layout of a model", "");
    c->add_option("MODEL", a.positionals, "the .cflow/.vflow file")->type_name("FILE");
    add_flag(*c, "--json", a.json, "the same as one JSON object");
}

void declare_critical_path(CLI::App& root, CriticalPathArgs& a) {
    CLI::App* c = add_command(
        root, "critical-path", "critical-path weight bandwidth of a model or a geometry (paper 4.5)",
        "Per-layer weight streams and the critical-path bandwidth B_naive, B_critical and the reduction\n"
        "(MiB/token), at 0.5 byte/weight and, for a file, its actual bytes. Without MODEL: --d, --layers and\n"
        "--heads are required (--blocks with --iters instead of --layers for FixedPoint).");
    c->add_option("MODEL", a.positionals, "the .cflow/.vflow file (the header gives the geometry)")->type_name("FILE");
    std::vector<CLI::Option*> geometry = {
        add_optional_integer(*c, "--d", a.d, 1, kMaxGeometryDim, "model width"),
        add_optional_integer(*c, "--layers", a.layers, 1, kMaxGeometryDim, "layers (FixedPoint: equal to --blocks)"),
        add_optional_integer(*c, "--heads", a.heads, 1, 65535, "attention heads"),
        add_optional_integer(*c, "--kv-heads", a.kv_heads, 1, 65535, "key/value heads (default: --heads)"),
        add_optional_integer(*c, "--head-dim", a.head_dim, 1, 65535, "head dimension (default: --d / --heads)"),
        add_optional_integer(*c, "--d-ff", a.d_ff, 0, kMaxGeometryDim, "dense FFN hidden width (0: none)"),
        add_optional_integer(*c, "--experts", a.experts, 0, 65535, "experts per layer"),
        add_optional_integer(*c, "--top-k", a.top_k, 0, 65535, "experts routed per token"),
        add_optional_integer(*c, "--expert-hidden", a.expert_hidden, 0, kMaxGeometryDim, "an expert's hidden width"),
        add_optional_integer(*c, "--shared-expert-hidden", a.shared_expert_hidden, 0, kMaxGeometryDim,
                             "the shared expert's hidden width"),
        add_optional_integer(*c, "--dense-delay", a.dense_delay, 0, 255, "dense FFN delay in layers"),
        add_optional_integer(*c, "--expert-delay", a.expert_delay, 0, 255, "expert delay in layers"),
        c->add_option("--combine-style", a.combine_style, "how the streams combine: 0-6 or a style name (e.g. DelayedSum)")
            ->check(combine_style_check())
            ->type_name("N|NAME"),
        add_optional_integer(*c, "--blocks", a.blocks, 1, 255, "FixedPoint: unique blocks"),
        add_optional_integer(*c, "--iters", a.iters, 1, 255, "FixedPoint: iterations over the blocks"),
    };
    add_flag(*c, "--json", a.json, "one JSON object");
    c->parse_complete_callback([&a, geometry] {
        for (const CLI::Option* option : geometry)
            if (option->count() > 0) a.given_geometry.push_back(option->get_name());
    });
}

void declare_plan(CLI::App& root, PlanArgs& a) {
    CLI::App* c = add_command(
        root, "plan", "predicted memory and speed of a model before loading it, and of the alternatives",
        "Resident memory, prefill and decode tok/s and the expert stall share for the file as asked, then for\n"
        "each KV type, expert arm and cache size (MoE) and quantisation the converter offers, from the file's\n"
        "tile plan and a calibration of this machine (stored beside the read-bandwidth figure; taken on the\n"
        "first run and with --calibrate, which takes tens of seconds).");
    c->add_option("MODEL", a.positionals, "the .cflow/.vflow file")->type_name("FILE");
    add_session_options(*c, a.session, kSessionContext | kSessionLoad | kSessionKvCache);
    c->add_option("--expert-fetch", a.session.expert_fetch,
                  "where a MoE model's experts come from: mapped, sync or staged (as generate)")
        ->transform(enum_choice<ExpertFetch>(parse_expert_fetch, "", "--expert-fetch must be 'mapped', 'sync' or 'staged'"))
        ->type_name("mapped|sync|staged")
        ->default_str("mapped");
    c->add_option_function<std::string>(
         "--cache-mib", [&a](const std::string& value) { a.session.cache_mib = *parse_cache_mib(value); },
         "RAM expert cache for sync/staged in MiB (0: off; fit: as generate sizes it)")
        ->check(text_check([](const std::string& v) { return bool(parse_cache_mib(v)); },
                           [](const std::string& v) { return parse_cache_mib(v).error(); }))
        ->type_name("M|fit")
        ->default_str("0");
    add_integer(*c, "--prompt-tokens", a.prompt_tokens, 1, 1 << 20, "the prompt the prefill figure is for");
    add_integer(*c, "--tokens", a.tokens, 1, 1 << 20, "the reply the decode figure averages over");
    c->add_option("--calibration", a.calibration, "use this stored calibration file instead of this machine's")
        ->type_name("FILE");
    add_flag(*c, "--calibrate", a.calibrate, "measure this machine again (tens of seconds per thread count: 1, 2, 4, ... and --threads) and store it");
    add_flag(*c, "--json", a.json, "one JSON object");
}

void declare_tokenize(CLI::App& root, TokenizeArgs& a, DetokenizeArgs& d) {
    CLI::App* c = add_command(
        root, "tokenize", "stdin (all of it, as bytes) to token ids or pieces on one line",
        "MODEL_OR_VOCAB: a .cflow/.vflow, a .gguf (vocab-only ones too) or a tokenizer.json.\n"
        "BOS/EOS only with --add-special.");
    c->add_option("MODEL_OR_VOCAB", a.positionals, "where the vocabulary comes from")->type_name("FILE");
    add_flag(*c, "--ids", a.ids, "token ids (the default)");
    add_flag(*c, "--pieces", a.pieces, "token pieces instead of ids");
    add_flag(*c, "--parse-special", a.parse_special, "special-token text becomes the special token");
    add_flag(*c, "--add-special", a.add_special, "add BOS/EOS as the model does");

    CLI::App* x = add_command(root, "detokenize", "whitespace-separated token ids on stdin to the text on stdout, exactly",
                              "MODEL_OR_VOCAB: a .cflow/.vflow, a .gguf (vocab-only ones too) or a tokenizer.json.");
    x->add_option("MODEL_OR_VOCAB", d.positionals, "where the vocabulary comes from")->type_name("FILE");
}

void declare_template(CLI::App& root, TemplateArgs& a) {
    CLI::App* c = add_command(
        root, "template", "print the rendered chat prompt exactly",
        "(MODEL | --template FILE.jinja) --messages MESSAGES.json: MODEL's template and BOS/EOS unless overridden.");
    c->add_option("MODEL", a.positionals, "the model or vocabulary whose template renders")->type_name("FILE");
    c->add_option("--template", a.template_file, "render with this Jinja file instead of a model's")->type_name("FILE.jinja");
    c->add_option("--messages", a.messages, "the conversation, an OpenAI-style messages array")->type_name("MESSAGES.json");
    add_flag(*c, "--no-generation-prompt", a.no_generation_prompt, "no assistant header after the last message");
    c->add_option("--bos", a.bos, "the BOS token text")->type_name("S");
    c->add_option("--eos", a.eos, "the EOS token text")->type_name("S");
    c->add_option("--kwargs", a.kwargs, "extra template variables, a JSON object")->type_name("JSON");
    c->add_option("--tools", a.tools, "the tools array passed to the template")->type_name("TOOLS.json");
}

void declare_synth(CLI::App& root, SynthArgs& a) {
    CLI::App* c = add_command(
        root, "synth", "a seeded random-weight llama model as .cflow (and GGUF)",
        "Weights are generated as Q4_0/Q8_0/Q4_1/Q5_0/Q5_1/IQ4_NL blocks (or llama.cpp's Q4_K_M mix); with --gguf\n"
        "the same tensors as a GGUF that llama.cpp loads: benchmarks on bit-identical weights.\n"
        "dense-1b: d 2048, 22 layers, ffn 5632, 32/4 heads, vocab 32000; moe-1b: d 2048, 16 layers, 8 experts\n"
        "of 1408, top-2; llama3.2-1b: Llama 3.2 1B's shape (16 layers, ffn 8192, 32/8 heads, tied head, vocab\n"
        "128256, rope scaling); qwen3-moe: Qwen3-30B-A3B's (architecture qwen3moe, 48 layers of 128 experts of\n"
        "768, top-8, 32/4 heads of 128 with Q/K norms, vocab 151936; --layers 8 keeps it small).\n"
        "Flags override a preset, without one --d, --layers, --heads and --d-ff or --experts\n"
        "(with --top-k, --expert-hidden) are required. --router-skew S scales expert e's router row by\n"
        "1 + S*(E-1-e)/(E-1), so low-numbered experts win top-k more often (a skewed routing, as trained\n"
        "routers have, for expert-cache benchmarks).");
    c->add_option("-o,--output", a.output, "the .cflow (or .vflow) to write")->type_name("OUT.cflow");
    c->add_option("--gguf", a.gguf, "also write the model as a GGUF")->type_name("OUT.gguf");
    c->add_option("--preset", a.preset, "a geometry to start from")
        ->check(text_check([](const std::string& v) { return is_synth_preset(v); },
                           [](const std::string& v) { return "option --preset: '" + v + "' is not one of " + synth_preset_names(); }))
        ->type_name("NAME");
    add_optional_integer(*c, "--d", a.d, 32, kMaxSynthDim, "model width (a multiple of 32)");
    add_optional_integer(*c, "--d-ff", a.d_ff, 0, kMaxSynthDim, "dense FFN hidden width (0: none)");
    add_optional_integer(*c, "--layers", a.layers, 1, 65535, "layers");
    add_optional_integer(*c, "--experts", a.experts, 0, kMaxSynthExperts, "experts per layer (0: dense)");
    add_optional_integer(*c, "--top-k", a.top_k, 0, kMaxSynthExperts, "experts routed per token");
    add_optional_integer(*c, "--expert-hidden", a.expert_hidden, 0, kMaxSynthDim, "an expert's hidden width");
    add_optional_integer(*c, "--heads", a.heads, 1, 65535, "attention heads");
    add_optional_integer(*c, "--kv-heads", a.kv_heads, 1, 65535, "key/value heads (default: --heads; presets: 4)");
    add_optional_integer(*c, "--vocab", a.vocab, 1, 1 << 20, "vocabulary size (at least 259; default 32000)");
    add_optional_integer(*c, "--dense-delay", a.dense_delay, 0, 255, "dense FFN delay in layers");
    add_optional_integer(*c, "--expert-delay", a.expert_delay, 0, 255, "expert delay in layers");
    c->add_option("--combine-style", a.combine_style, "how the streams combine: 0-6 or a style name (e.g. DelayedSum)")
        ->check(combine_style_check())
        ->type_name("N|NAME");
    c->add_option("--quant", a.quant, "the weights' blocks (default q4_0)")
        ->check(text_check(
            [](const std::string& v) {
                for (const char* name : {"q4_0", "q8_0", "q4_k_m", "q4_1", "q5_0", "q5_1", "iq4_nl"}) {
                    std::string upper(name);
                    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
                    if (v == name || v == upper) return true;
                }
                return false;
            },
            [](const std::string& v) {
                return "option --quant: '" + v + "' is not " + std::string(kSynthQuantNames) + " (synth writes ggml blocks only)";
            }))
        ->type_name("q4_0|q8_0|q4_k_m|q4_1|q5_0|q5_1|iq4_nl");
    add_integer(*c, "--seed", a.seed, 0, std::numeric_limits<long long>::max(), "the weights' seed", "S");
    c->add_option("--router-skew", a.router_skew, "skew of the router rows toward low-numbered experts")
        ->check(number_in(0.0, 64.0))
        ->type_name("S")
        ->capture_default_str();
}

// The message of a usage error, without CLI11's repetition of the option's name when the
// validator's own message names it already.
std::string usage_error_text(const CLI::ParseError& e) {
    std::string text = e.what();
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) {  // "The following argument(s) was/were not expected: A B"
        const auto colon = text.find(": ");
        const std::string extras = colon == std::string::npos ? text : text.substr(colon + 2);
        if (extras.find(' ') == std::string::npos)
            return extras[0] == '-' ? "unknown option " + extras : "unexpected argument '" + extras + "'";
        return "unexpected arguments " + extras;
    }
    const auto colon = text.find(": ");
    if (colon != std::string::npos && colon > 0 && text[0] == '-') {
        const std::string name = text.substr(0, colon);
        const std::string rest = text.substr(colon + 2);
        if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && rest.size() >= 7 &&
            rest.compare(rest.size() - 7, 7, "missing") == 0)
            return "option " + name + " needs a value";
        if (rest.find(name) != std::string::npos) return rest;
    }
    return text;
}

// The subcommand path the parser selected: "bench experts".
std::string selected_command(const CLI::App& root) {
    std::string path;
    const CLI::App* app = &root;
    while (true) {
        const auto selected = app->get_subcommands();
        if (selected.empty()) break;
        app = selected.front();
        path += (path.empty() ? "" : " ") + app->get_name();
    }
    return path;
}

} // namespace

CommandLine::CommandLine(std::string version) : version_(std::move(version)), app_(std::make_unique<CLI::App>()) {
    CLI::App& root = *app_;
    root.name("cflow");
    root.description("cflow: the headless command-line tool of cflow studio: convert, inspect and run .cflow models");
    root.footer("Run 'cflow COMMAND --help' (or 'cflow help COMMAND') for a command's options.");
    // As the hand-written parser did: an option given twice keeps the last value.
    root.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    root.get_formatter()->column_width(32);
    root.add_flag("--version", version_flag_, "print the version and exit");  // handled before parsing (parse())
    // One command per run: a later word that names another command is an argument (a file called
    // "chat"), not a second command.
    root.require_subcommand(0, 1);
    declare_convert(root, args_.convert);
    declare_generate(root, args_.generate);
    declare_perplexity(root, args_.perplexity);
    declare_bench(root, args_.bench, args_.bench_experts);
    declare_chat(root, args_.chat);
    declare_serve(root, args_.serve);
    declare_logits(root, args_.logits);
    declare_scorecard(root, args_.scorecard);
    declare_inspect(root, args_.inspect);
    declare_critical_path(root, args_.critical_path);
    declare_plan(root, args_.plan);
    declare_tokenize(root, args_.tokenize, args_.detokenize);
    declare_template(root, args_.template_);
    declare_synth(root, args_.synth);
}

CommandLine::~CommandLine() = default;

std::vector<std::string> CommandLine::command_names() const {
    std::vector<std::string> names;
    for (const CLI::App* command : app_->get_subcommands([](const CLI::App*) { return true; })) {
        names.push_back(command->get_name());
        for (const CLI::App* sub : command->get_subcommands([](const CLI::App*) { return true; }))
            names.push_back(command->get_name() + " " + sub->get_name());
    }
    return names;
}

ParseOutcome CommandLine::parse(const std::vector<std::string>& args) {
    ParseOutcome outcome;
    auto finish = [&outcome](int code) -> ParseOutcome& {
        outcome.exit_code = code;
        return outcome;
    };
    if (args.empty()) {
        outcome.err = app_->help();
        return finish(kNoCommandExit);
    }
    std::vector<std::string> words = args;
    if (words[0] == "--help" || words[0] == "-h" || (words[0] == "help" && words.size() == 1)) {
        outcome.out = app_->help();
        return finish(0);
    }
    if (words[0] == "--version") {
        if (words.size() > 1) {
            outcome.err = "cflow: --version takes no arguments\n";
            return finish(kNoCommandExit);
        }
        outcome.out = "cflow " + version_ + "\n";
        return finish(0);
    }
    if (words[0] == "help") {  // `cflow help CMD [SUB]` is `cflow CMD [SUB] --help`
        words.erase(words.begin());
        words.push_back("--help");
    }
    const auto commands = app_->get_subcommands([](const CLI::App*) { return true; });
    const bool known = std::any_of(commands.begin(), commands.end(),
                                   [&](const CLI::App* command) { return command->get_name() == words[0]; });
    if (!known) {
        outcome.err = "cflow: unknown command '" + words[0] + "' (try cflow --help)\n";
        return finish(kNoCommandExit);
    }
    std::vector<std::string> reversed(words.rbegin(), words.rend());  // CLI11 takes them last first
    try {
        app_->parse(reversed);
    } catch (const CLI::CallForHelp&) {
        outcome.out = app_->help();
        return finish(0);
    } catch (const CLI::ParseError& e) {
        std::string command = selected_command(*app_);
        if (command.empty()) command = words[0];
        outcome.err = "cflow " + command + ": " + usage_error_text(e) + " (see 'cflow " + command + " --help')\n";
        return finish(kUsageErrorExit);
    }
    outcome.command = selected_command(*app_);
    return outcome;
}

} // namespace cflow::cli
