// cflow synth: a random-weight model as .cflow (and, with --gguf, the same tensors as a GGUF that
// llama.cpp loads), so cflow and llama.cpp can be timed on bit-identical weights.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cflow/formats/converter.h"
#include "cflow/formats/gguf_writer.h"
#include "cflow/formats/model_path_kind.h"
#include "commands.h"
#include "file_identity.h"
#include "interrupt.h"
#include "cflow/formats/synth/synth_model.h"
#include "synth_args.h"

namespace cflow::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

// The generation takes seconds: a folder that cannot take the output is reported before it.
Status check_output_folder(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
        return make_error(ErrorKind::Io, path + ": output directory '" + parent.string() + "' does not exist");
    return {};
}

std::string printf_line(const char* fmt, auto... values) {
    const int n = std::snprintf(nullptr, 0, fmt, values...);  // sized first: paths have no length limit
    std::string line(n > 0 ? static_cast<size_t>(n) : 0, '\0');
    std::snprintf(line.data(), line.size() + 1, fmt, values...);
    return line;
}

Status write_gguf_file(const SynthModel& m, const std::string& path, const CancelToken& cancel) {
    std::vector<GgufTensorData> tensors;
    tensors.reserve(m.tensor_order.size());
    for (const std::string& name : m.tensor_order) tensors.push_back(gguf_tensor(*m.source.find(name)));
    return write_gguf(path, m.gguf_metadata, tensors, {}, &cancel);
}

} // namespace

int run_synth(const SynthArgs& args) {
    const auto& out = args.output;
    if (!out) return fail("synth", "missing -o OUT.cflow");
    const auto& gguf = args.gguf;

    auto synth = synth_spec_from_args(args);
    if (!synth) return fail("synth", synth.error());
    if (gguf) {
        if (Status s = check_gguf_expressible(*synth); !s) return fail("synth", s.error());
        if (is_same_file(*out, *gguf)) return fail("synth", "options -o and --gguf name the same file '" + *gguf + "'");
    }

    for (const auto& path : {out, gguf})
        if (path)
            if (Status s = check_output_folder(*path); !s) return fail("synth", s.error());

    // The report is printed once everything succeeded: a failure stays the CLI's one stderr line.
    std::string report;
    CancelToken cancel;
    InterruptGuard guard(cancel);
    auto t0 = Clock::now();
    auto model = make_synth_model(*synth, 0, &cancel);
    if (!model) return fail("synth", model.error());
    report += printf_line("generated %s: %.3f B weights, %.1f MiB (%s, seed %llu) in %.2f s\n", synth->name.c_str(),
                          static_cast<double>(model->weight_count) * 1e-9, mib(model->weight_bytes),
                          synth_quant_name(synth->quant).c_str(),
                          static_cast<unsigned long long>(synth->seed),
                          seconds_since(t0));

    ConvertOptions options;
    // Same type as the blocks: the tiles carry them bit for bit (the 32-weight GGUF types are no
    // quantisation target; keep_source_types keeps them, Q8_0 is only the class default).
    options.weight_quant = is_ggml_tile(synth->quant) && !is_kquant(synth->quant) ? DType::Q8_0 : synth->quant;
    options.keep_source_types = true;     // the Q4_K_M mix: each matrix keeps its own K-quant
    const bool vflow = model_kind_from_name(*out) == ModelPathKind::Vflow;
    options.format = vflow ? ContainerFormat::Vflow : ContainerFormat::Cflow;
    t0 = Clock::now();
    auto converted = convert_to_cflow(model->source, *out, options, {}, &cancel);
    if (!converted) return fail("synth", converted.error());
    report += printf_line("wrote %s: %llu bytes, %llu tensors (%llu re-tiled bit-exactly) in %.2f s\n", out->c_str(),
                          static_cast<unsigned long long>(converted->file_bytes),
                          static_cast<unsigned long long>(converted->tensors),
                          static_cast<unsigned long long>(converted->retiled_exact_tensors), seconds_since(t0));

    if (gguf) {
        t0 = Clock::now();
        if (Status s = write_gguf_file(*model, *gguf, cancel); !s) return fail("synth", s.error());
        std::error_code ec;
        const auto bytes = std::filesystem::file_size(*gguf, ec);
        report += printf_line("wrote %s: %llu bytes in %.2f s\n", gguf->c_str(),
                              static_cast<unsigned long long>(ec ? 0 : bytes), seconds_since(t0));
        if (!synth->llama_schedule())
            report += printf_line("note: %s describes the plain sequential llama model; --combine-style and "
                                  "the delays apply to %s only\n",
                                  gguf->c_str(), out->c_str());
    }
    std::fputs(report.c_str(), stderr);
    return 0;
}

} // namespace cflow::cli
