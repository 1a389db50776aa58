#include <chrono>
#include <cstdio>
#include <memory>

#include "cflow/engine/generation/generate.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cli_args.h"
#include "console.h"
#include "commands.h"
#include "default_model.h"
#include "expert_fetch_args.h"
#include "interrupt.h"
#include "kv_cache_args.h"
#include "load_args.h"
#include "sampling_args.h"

namespace cflow::cli {

int run_generate(const std::vector<std::string>& argv) {
    ArgSpec spec{{"-p", "--prompt", "--threads", "--ctx", "--load", "--telemetry-file", "--expert-fetch", "--cache-mib", "--io-backend", "--kv-cache"},
                 {"--no-stats", "--stats", "--trace-experts"}};
    spec.valued.merge(sampling_option_names());
    auto args = Args::parse(argv, spec);
    if (!args) return fail("generate", args.error());
    auto model_path = model_argument_or_default(args->positionals());
    if (!model_path) return fail("generate", model_path.error());
    const std::string prompt = args->value("-p").value_or(args->value("--prompt").value_or(""));

    auto sampling = parse_sampling_args(*args, 128);
    if (!sampling) return fail("generate", sampling.error());
    GenerateRequest request;
    request.max_tokens = sampling->max_tokens;
    request.sampling = sampling->sampling;
    auto threads = args->integer("--threads", 0, 0, 1024);
    if (!threads) return fail("generate", threads.error());
    auto ctx = args->integer("--ctx", 0, 0, 1 << 24);
    if (!ctx) return fail("generate", ctx.error());
    SessionOptions session_options;
    session_options.threads = unsigned(*threads);
    session_options.context_length = uint32_t(*ctx);
    auto fetch = parse_expert_fetch_arg(*args);
    if (!fetch) return fail("generate", fetch.error());
    session_options.expert_fetch = *fetch;
    auto io_backend = parse_io_backend_arg(*args);
    if (!io_backend) return fail("generate", io_backend.error());
    if (Status st = check_io_backend_for(*io_backend, *fetch); !st) return fail("generate", st.error());
    session_options.io_backend = *io_backend;
    auto cache_mib = parse_cache_mib_arg(*args);
    if (!cache_mib) return fail("generate", cache_mib.error());
    auto kv_cache = parse_kv_cache_arg(*args, KvCacheType::F16);
    if (!kv_cache) return fail("generate", kv_cache.error());
    session_options.kv_cache = *kv_cache;
    auto load = parse_load_args(*args, *model_path, *fetch != ExpertFetch::Mapped);
    if (!load) return fail("generate", load.error());

    const auto t_load = std::chrono::steady_clock::now();
    auto model = load_model(*model_path, *load);
    if (!model) return fail("generate", model.error());
    const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
    if (*cache_mib) {
        auto bytes = expert_cache_bytes_for(**cache_mib, session_options.expert_fetch, **model);
        if (!bytes) return fail("generate", bytes.error());
        session_options.expert_cache_bytes = *bytes;
    }
    auto session = Session::create(model.value(), session_options);
    if (!session) return fail("generate", session.error());

    request.prompt = (*model)->tokenizer().encode(prompt, /*add_special=*/true);

    // --stats / --trace-experts: one JSON object per forward step, on stderr or --telemetry-file.
    std::FILE* telemetry_out = stderr;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> telemetry_file(nullptr, &std::fclose);
    const bool want_stats = args->flag("--stats"), want_experts = args->flag("--trace-experts");
    const std::string telemetry_path = args->value("--telemetry-file").value_or("");
    if (!telemetry_path.empty()) {
        telemetry_file.reset(std::fopen(telemetry_path.c_str(), "w"));
        if (!telemetry_file) return fail("generate", telemetry_path + ": cannot open telemetry file for writing");
        telemetry_out = telemetry_file.get();
    }
    if (want_stats || want_experts)
        request.on_step = [=](const TokenTelemetry& t) {
            std::fprintf(telemetry_out, "%s\n", to_json_line(t, want_experts, want_stats).c_str());
        };

    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
    CancelToken cancel;
    InterruptGuard guard(cancel);
    auto stats = generate(**session, request, [](int32_t, std::string_view text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        return true;
    }, &cancel);
    if (!stats) return fail("generate", stats.error());
    if (telemetry_file) {
        // Buffered writes fail late: a full disk (or /dev/full) shows only at flush and close.
        const bool write_failed = std::ferror(telemetry_file.get()) != 0 || std::fflush(telemetry_file.get()) != 0;
        if (std::fclose(telemetry_file.release()) != 0 || write_failed)
            return fail("generate", telemetry_path + ": writing the telemetry failed (disk full?)");
    }
    if (!args->flag("--no-stats")) {
        std::fprintf(stderr,
                     "\n[cflow] model %s | isa %s | threads %u | kv cache %s | seed %llu | load %.1f ms (%s: %s)\n"
                     "[cflow] prompt %u tokens, %.2f tok/s | generated %u tokens, %.2f tok/s | first token %.1f ms | stop: %s\n",
                     terminal_safe((*model)->name()).c_str(), std::string(isa_name((*session)->isa())).c_str(), (*session)->threads(),
                     std::string(kv_cache_type_name((*session)->kv_cache_type())).c_str(), (unsigned long long)request.sampling.seed, load_ms, load->name.c_str(), load->reason.c_str(), stats->prompt_tokens, stats->prompt_tokens_per_s(),
                     stats->generated_tokens, stats->decode_tokens_per_s(), stats->time_to_first_token_ms,
                     std::string(stop_reason_name(stats->stop_reason)).c_str());
        if (auto backend = (*session)->io_backend()) {
            const std::string note = (*session)->io_backend_note();
            std::fprintf(stderr, "[cflow] experts %s: %s reads, %s%s%s\n",
                         std::string(expert_fetch_name((*session)->expert_fetch())).c_str(),
                         std::string(io_backend_name(*backend)).c_str(),
                         (*session)->staged_direct_io() ? "direct I/O" : "buffered (the file system refused direct I/O)",
                         note.empty() ? "" : "; ", note.c_str());
        }
    }
    return 0;
}

} // namespace cflow::cli
