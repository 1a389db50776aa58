#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/chat/chat_session.h"
#include "cflow/engine/generation/generate.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/formats/mapped_file.h"
#include "cflow/formats/whole_file.h"
#include "commands.h"
#include "file_identity.h"
#include "console.h"
#include "default_model.h"
#include "interrupt.h"

namespace cflow::cli {

int run_generate(const GenerateArgs& args) {
    auto model_path = model_argument_or_default(args.positionals);
    if (!model_path) return fail("generate", model_path.error());
    const std::string& prompt = args.prompt;
    const SamplingArgs sampling = args.sampling.resolved();
    GenerateRequest request;
    request.max_tokens = sampling.max_tokens;
    request.sampling = sampling.sampling;
    request.stop_at_end_of_generation = !args.ignore_eos;

    if (!args.grammar_file.empty()) {
        auto source = read_whole_file(args.grammar_file, GrammarLimits{}.max_source_bytes, "a grammar");
        if (!source) return fail("generate", source.error());
        auto grammar = parse_grammar(*source);
        // "grammar:LINE:COLUMN: what" -> "FILE:LINE:COLUMN: what"
        if (!grammar) return fail("generate", args.grammar_file + grammar.error().substr(std::string_view("grammar").size()));
        request.grammar = std::make_shared<const Grammar>(std::move(grammar.value()));
    }
    if (!args.json_schema.file.empty()) {
        if (request.grammar) return fail("generate", "--grammar and --json-schema each constrain the output: give one");
        auto grammar = load_json_schema_grammar(args.json_schema);
        if (!grammar) return fail("generate", grammar.error());
        request.grammar = *grammar;
    }

    auto loaded = load_for_session(args.session, *model_path);
    if (!loaded) return fail("generate", loaded.error());
    const std::shared_ptr<const Model>& model = loaded->model;
    const LoadChoice& load = loaded->load;
    const double load_ms = loaded->load_ms;
    auto session = Session::create(model, loaded->options);
    if (!session) return fail("generate", session.error());

    request.prompt = model->tokenizer().encode(prompt, /*add_special=*/true);
    if (args.context_policy != ContextPolicy::Stop) {
        // Past the context: shift it, keeping BOS (no system prompt here), and go on.
        const bool bos = !request.prompt.empty() && request.prompt.front() == model->tokenizer().bos_id();
        request.context_shift = ContextShift{{}, bos ? 1u : 0u};
    }

    // --stats / --trace-experts: one JSON object per forward step, on stderr or --telemetry-file.
    // A regular (or new) file is written beside the target and renamed over it at the end, so a
    // full disk leaves the file that was there (it left a 0-byte one); a FIFO or a device (a
    // live reader) is written directly.
    std::FILE* telemetry_out = stderr;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> telemetry_file(nullptr, &std::fclose);
    std::unique_ptr<AtomicFileWriter> telemetry_atomic;
    std::string telemetry_error;  // the first failed write
    const bool want_stats = args.stats, want_experts = args.trace_experts;
    const std::string& telemetry_path = args.telemetry_file;
    if (!telemetry_path.empty()) {
        if (is_same_file(telemetry_path, *model_path))
            return fail("generate", telemetry_path + ": --telemetry-file names the model itself; choose another file");
        std::error_code ec;
        const auto kind = std::filesystem::status(path_from_utf8(telemetry_path), ec).type();
        if (kind == std::filesystem::file_type::not_found || kind == std::filesystem::file_type::regular) {
            telemetry_atomic = std::make_unique<AtomicFileWriter>(telemetry_path);
            if (Status opened = telemetry_atomic->open(); !opened) return fail("generate", opened.error());
        } else {
            telemetry_file.reset(std::fopen(telemetry_path.c_str(), "w"));
            if (!telemetry_file) return fail("generate", telemetry_path + ": cannot open telemetry file for writing");
            telemetry_out = telemetry_file.get();
        }
    }
    if (want_stats || want_experts) {
        AtomicFileWriter* atomic = telemetry_atomic.get();
        request.on_step = [=, &telemetry_error](const TokenTelemetry& t) {
            const std::string line = to_json_line(t, want_experts, want_stats) + "\n";
            if (!atomic) {
                std::fwrite(line.data(), 1, line.size(), telemetry_out);
            } else if (telemetry_error.empty()) {
                if (Status written = atomic->write(line.data(), line.size()); !written) telemetry_error = written.error();
            }
        };
    }

    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
    CancelToken cancel;
    InterruptGuard guard(cancel);
    auto stats = generate(**session, request, [](int32_t, std::string_view text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
        return true;
    }, &cancel);
    // The telemetry of a failed or interrupted generation is kept too: it shows where it stopped.
    if (telemetry_atomic) {
        Status committed = telemetry_error.empty() ? telemetry_atomic->commit()
                                                   : Status(make_error(ErrorKind::Io, telemetry_error));
        if (!committed)
            return fail("generate", "writing the telemetry failed (disk full?), " + telemetry_path +
                                        " is as it was: " + committed.error());
    }
    if (!stats) return fail("generate", stats.error());
    if (telemetry_file) {
        // Buffered writes fail late: a full disk (or /dev/full) shows only at flush and close.
        const bool write_failed = std::ferror(telemetry_file.get()) != 0 || std::fflush(telemetry_file.get()) != 0;
        if (std::fclose(telemetry_file.release()) != 0 || write_failed)
            return fail("generate", telemetry_path + ": writing the telemetry failed (disk full?)");
    }
    if (!args.no_stats) {
        std::fprintf(stderr,
                     "\n[cflow] model %s | isa %s | threads %u | kv cache %s | seed %llu | load %.1f ms (%s: %s)\n"
                     "[cflow] prompt %u tokens, %.2f tok/s | generated %u tokens, %.2f tok/s | first token %.1f ms | stop: %s\n",
                     terminal_safe(model->name()).c_str(), std::string(isa_name((*session)->isa())).c_str(), (*session)->threads(),
                     std::string(kv_cache_type_name((*session)->kv_cache_type())).c_str(), (unsigned long long)request.sampling.seed, load_ms, load.name.c_str(), load.reason.c_str(), stats->prompt_tokens, stats->prompt_tokens_per_s(),
                     stats->generated_tokens, stats->decode_tokens_per_s(), stats->time_to_first_token_ms,
                     std::string(stop_reason_name(stats->stop_reason)).c_str());
        if (stats->context_shifts > 0)
            std::fprintf(stderr, "[cflow] context of %u tokens full %u time(s): %u of the oldest tokens left out (%s), %u fed again\n",
                         (*session)->context_length(), stats->context_shifts, stats->shift_dropped_tokens,
                         std::string(context_policy_name(args.context_policy)).c_str(), stats->shift_refed_tokens);
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
