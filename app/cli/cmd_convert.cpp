#include <chrono>
#include <cstdio>

#include "cflow/engine/forward/load_check.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/model_path_kind.h"
#include "cflow/formats/source_model.h"
#include "cli_args.h"
#include "commands.h"
#include "interrupt.h"

namespace cflow::cli {

int fail(const std::string& command, const std::string& message) {
    std::fprintf(stderr, "cflow %s: %s\n", command.c_str(), message.c_str());
    return 1;
}

int run_convert(const std::vector<std::string>& argv) {
    const ArgSpec spec{{"-o", "--output", "--quant", "--embedding-quant", "--tokenizer", "--threads", "--format"}, {"--quiet"}};
    auto args = Args::parse(argv, spec);
    if (!args) return fail("convert", args.error());
    if (args->positionals().size() != 1) return fail("convert", "expected exactly one source (model folder, .gguf or llama2.c .bin)");
    auto out = args->value("-o");
    if (!out) out = args->value("--output");
    if (!out) return fail("convert", "missing -o OUT.cflow (or OUT.vflow)");

    ConvertOptions options;
    if (auto q = args->value("--quant")) {
        auto t = parse_dtype(*q);
        if (!t || !is_tile_dtype(*t)) return fail("convert", "--quant must be q4_0, q8_0, f16 or f32 (got '" + *q + "')");
        options.weight_quant = *t;
    }
    if (auto q = args->value("--embedding-quant")) {
        auto t = parse_dtype(*q);
        if (!t || !is_tile_dtype(*t)) return fail("convert", "--embedding-quant must be q4_0, q8_0, f16 or f32 (got '" + *q + "')");
        options.embedding_quant = *t;
    }
    // Container: --format wins; otherwise the output's extension decides (.vflow -> vflow, else cflow).
    const bool vflow_name = model_kind_from_name(*out) == ModelPathKind::Vflow;
    options.format = vflow_name ? ContainerFormat::Vflow : ContainerFormat::Cflow;
    if (auto f = args->value("--format")) {
        if (*f == "cflow") options.format = ContainerFormat::Cflow;
        else if (*f == "vflow") options.format = ContainerFormat::Vflow;
        else return fail("convert", "--format must be cflow or vflow (got '" + *f + "')");
    }
    auto threads = args->integer("--threads", 0, 0, 1024);
    if (!threads) return fail("convert", threads.error());
    options.threads = unsigned(*threads);

    auto source = open_source_model(args->positionals()[0], args->value("--tokenizer").value_or(""));
    if (!source) return fail("convert", source.error());

    // The written file must load as `generate` would load it before it replaces the output:
    // the converter's own checks missed files the engine refused (no FFN, vocabulary sizes).
    options.verify_output = [out = *out](const std::string& written) { return check_model_loads(written, out); };

    const bool quiet = args->flag("--quiet");
    CancelToken cancel;
    InterruptGuard guard(cancel, InterruptSignals::InterruptAndTermination);
    const auto t0 = std::chrono::steady_clock::now();
    auto report = convert_to_cflow(
        *source, *out, options,
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
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "wrote %s: %llu bytes, %llu tensors, %llu tiles (%llu tensors re-tiled bit-exactly) in %.2f s\n",
                 out->c_str(), (unsigned long long)report->file_bytes, (unsigned long long)report->tensors,
                 (unsigned long long)report->tiles, (unsigned long long)report->retiled_exact_tensors, seconds);
    return 0;
}

} // namespace cflow::cli
