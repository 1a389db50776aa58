#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/convert/conversion_preflight.h"
#include "cflow/engine/convert/conversion_report.h"
#include "cflow/engine/convert/conversion_validation.h"
#include "cflow/engine/forward/load_check.h"
#include "cflow/engine/kernels/kernels.h"
#include "cflow/formats/conversion_plan.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/whole_file.h"
#include "cflow/formats/model_path_kind.h"
#include "cflow/formats/source_model.h"
#include "commands.h"
#include "console.h"
#include "interrupt.h"

namespace cflow::cli {
namespace {

// A --*quant value the parser has checked (is_quantisation_target).
DType quant_type(const std::string& value) { return *parse_dtype(value); }

// The output's folder must hold the whole new file while the old one (if any) still exists.
Status check_free_space(const std::string& out_path, uint64_t file_bytes) {
    std::error_code ec;
    const std::filesystem::path out = path_from_utf8(out_path);
    const auto space = std::filesystem::space(out.has_parent_path() ? out.parent_path() : std::filesystem::path("."), ec);
    if (ec || space.available >= file_bytes) return {};
    return make_error(ErrorKind::Io, out_path + ": the output needs " + std::to_string(file_bytes) + " bytes but only " +
                                         std::to_string(space.available) + " are free there");
}

int run_preflight_only(const std::string& source, const std::string& tokenizer, const std::string& out,
                       const ConvertOptions& options, unsigned threads, bool json) {
    PreflightRequest request;
    request.source_path = source;
    request.tokenizer_path = tokenizer;
    request.output_path = out;
    request.options = options;
    request.threads = threads;
    auto report = run_preflight(request);
    if (!report) return fail("convert", report.error());
    const std::string text = json ? preflight_json(*report) + "\n" : preflight_text(*report);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return report->blocked() ? 2 : 0;
}

} // namespace

std::string one_line(std::string message) {
    for (char& c : message)
        if (c == '\n' || c == '\r') c = ' ';
    return message;
}

int fail(const std::string& command, const std::string& message) {
    std::fprintf(stderr, "cflow %s: %s\n", command.c_str(), message.c_str());
    return 1;
}

int run_convert(const ConvertArgs& args) {
    if (args.positionals.size() != 1) return fail("convert", "expected exactly one source (model folder, .gguf or llama2.c .bin)");
    if (!args.output && !args.preflight) return fail("convert", "missing -o OUT.cflow (or OUT.vflow)");
    // Refused before the source is read: an empty path only failed at the final rename.
    if (args.output && args.output->empty()) return fail("convert", "-o: the output path is empty");
    const std::string out = args.output.value_or(std::string());  // empty: --preflight without -o

    ConvertOptions options;
    // A GGUF keeps each tensor's own type (Q4_K_M stays its mix, bit for bit) unless a quant
    // option asks for re-quantising: then every weight gets the asked types.
    const std::pair<const std::optional<std::string>*, TensorClass> class_options[] = {
        {&args.embedding_quant, TensorClass::Embeddings}, {&args.attention_quant, TensorClass::Attention},
        {&args.ffn_quant, TensorClass::DenseFfn}, {&args.expert_quant, TensorClass::Experts},
        {&args.output_quant, TensorClass::Output}};
    bool quant_asked = args.quant.has_value();
    for (const auto& [option, tensor_class] : class_options) quant_asked = quant_asked || option->has_value();
    options.keep_source_types = !quant_asked && sniff_model_path(args.positionals[0]) == ModelPathKind::Gguf;
    // A type without fast kernels (none today) would become the nearest fast type unless every type is asked for.
    options.keep_dtype_mask = args.keep_every_type ? 0u : kNativeSpeedTileDtypes;
    if (args.quant) options.weight_quant = quant_type(*args.quant);
    for (const auto& [option, tensor_class] : class_options)
        if (*option) set_quant_for(options, tensor_class, quant_type(**option));
    // Container: --format wins; otherwise the output's extension decides (.vflow -> vflow, else cflow).
    const bool vflow_name = model_kind_from_name(out) == ModelPathKind::Vflow;
    options.format = vflow_name ? ContainerFormat::Vflow : ContainerFormat::Cflow;
    if (args.format) options.format = *args.format == "vflow" ? ContainerFormat::Vflow : ContainerFormat::Cflow;
    options.threads = args.threads;

    const std::string source_path = args.positionals[0];
    const std::string& tokenizer_path = args.tokenizer;
    if (args.preflight) return run_preflight_only(source_path, tokenizer_path, out, options, options.threads, args.json);
    if (args.json) return fail("convert", "--json goes with --preflight");
    std::string sample;
    if (args.sample) {
        if (!args.validate) return fail("convert", "--sample goes with --validate");
        auto text = read_whole_file(*args.sample, kMaxTextInputBytes, "a validation sample");
        if (!text) return fail("convert", text.error());
        sample = std::move(text).value();
    }

    auto source = open_source_model(source_path, tokenizer_path);
    if (!source) return fail("convert", source.error());
    auto plan = plan_conversion(*source, options);
    if (!plan) return fail("convert", plan.error());
    if (Status s = check_free_space(out, plan->file_bytes); !s) return fail("convert", s.error());

    // The written file must load as `generate` would load it before it replaces the output:
    // the converter's own checks missed files the engine refused (no FFN, vocabulary sizes).
    options.verify_output = [out](const std::string& written) { return check_model_loads(written, out); };

    const bool quiet = args.quiet;
    CancelToken cancel;
    InterruptGuard guard(cancel, InterruptSignals::InterruptAndTermination);
    const auto t0 = std::chrono::steady_clock::now();
    auto report = convert_to_cflow(
        *source, out, options,
        [quiet](const ConvertProgress& p) {
            if (!quiet)
                std::fprintf(stderr, "\r[%llu/%llu] %-48.48s", (unsigned long long)p.tensors_done,
                             (unsigned long long)p.tensors_total, p.current.c_str());
        },
        &cancel);
    if (!quiet) std::fputc('\n', stderr);
    if (!report) return fail("convert", report.error());
    for (const std::string& path : report->removed_stale_temp_files)
        std::fprintf(stderr, "removed %s, left by an earlier conversion that was killed\n", path.c_str());
    for (const std::string& path : report->recent_temp_files)
        std::fprintf(stderr, "note: %s is another conversion's temporary file (running, or killed within the hour)\n",
                     path.c_str());
    for (const std::string& ignored : report->ignored_tensors)
        std::fprintf(stderr, "note: left out %s\n", terminal_safe(ignored).c_str());
    if (!report->kquant_fallbacks.empty()) {
        std::fprintf(stderr, "note: %zu matrices took q8_0 instead of a K-quant (their inputs are not whole super-blocks), "
                             "first: %s\n",
                     report->kquant_fallbacks.size(), report->kquant_fallbacks.front().c_str());
    }
    if (!report->requantised_tensors.empty()) {
        // Listed, not hidden: each one lost some of the quality the source file had.
        constexpr size_t kListed = 8;
        std::fprintf(stderr, "note: %zu quantised matrices re-quantised (their values change):\n",
                     report->requantised_tensors.size());
        for (size_t i = 0; i < report->requantised_tensors.size() && i < kListed; ++i)
            std::fprintf(stderr, "  %s\n", terminal_safe(report->requantised_tensors[i]).c_str());
        if (report->requantised_tensors.size() > kListed)
            std::fprintf(stderr, "  ... and %zu more\n", report->requantised_tensors.size() - kListed);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "wrote %s: %llu bytes, %llu tensors, %llu tiles (%llu tensors re-tiled bit-exactly) in %.2f s\n",
                 out.c_str(), (unsigned long long)report->file_bytes, (unsigned long long)report->tensors,
                 (unsigned long long)report->tiles, (unsigned long long)report->retiled_exact_tensors, seconds);
    if (!args.validate) return 0;

    ValidationRequest validation;
    validation.source_path = source_path;
    validation.tokenizer_path = tokenizer_path;
    validation.converted_path = out;
    validation.sample_text = sample;
    validation.threads = options.threads;
    auto checked = validate_conversion(validation, [quiet](const ValidationStage& stage) {
        if (!quiet) std::fprintf(stderr, "\rvalidating: %-10s %3.0f%%", stage.name.c_str(), 100 * stage.fraction);
    }, &cancel);
    if (!quiet) std::fputc('\n', stderr);
    if (!checked) return fail("convert", "validation: " + checked.error());
    ConversionRecord record;
    record.source_path = source_path;
    record.output_path = out;
    record.options_text = convert_options_text(options);
    record.convert_seconds = seconds;
    record.file_bytes = report->file_bytes;
    record.validation = &*checked;
    if (Status s = write_conversion_report(record); !s) return fail("convert", "the report: " + s.error());
    const std::string text = validation_text(*checked);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fprintf(stderr, "report: %s\n", conversion_report_paths(out).markdown.c_str());
    return checked->verdict == "fail" ? 3 : 0;
}

} // namespace cflow::cli
