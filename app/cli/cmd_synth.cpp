// cflow synth: a random-weight model as .cflow (and, with --gguf, the same tensors as a GGUF that
// llama.cpp loads), so cflow and llama.cpp can be timed on bit-identical weights.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cflow/formats/converter.h"
#include "cflow/formats/gguf_writer.h"
#include "cli_args.h"
#include "commands.h"
#include "interrupt.h"
#include "synth_model.h"
#include "synth_spec.h"

namespace cflow::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

bool same_file_name(const std::string& a, const std::string& b) {
    std::error_code ea, eb;
    const auto ca = std::filesystem::weakly_canonical(a, ea), cb = std::filesystem::weakly_canonical(b, eb);
    return ea || eb ? a == b : ca == cb;
}

Status write_gguf_file(const SynthModel& m, const std::string& path, const CancelToken& cancel) {
    std::vector<GgufTensorData> tensors;
    tensors.reserve(m.tensor_order.size());
    for (const std::string& name : m.tensor_order) tensors.push_back(gguf_tensor(*m.source.find(name)));
    return write_gguf(path, m.gguf_metadata, tensors, {}, &cancel);
}

} // namespace

int run_synth(const std::vector<std::string>& argv) {
    ArgSpec spec{synth_geometry_options(), {}};
    spec.valued.insert({"-o", "--output", "--gguf"});
    auto args = Args::parse(argv, spec);
    if (!args) return fail("synth", args.error());
    if (!args->positionals().empty())
        return fail("synth", "unexpected argument '" + args->positionals()[0] + "' (synth takes only options)");
    auto out = args->value("-o");
    if (!out) out = args->value("--output");
    if (!out) return fail("synth", "missing -o OUT.cflow");
    const auto gguf = args->value("--gguf");

    auto synth = synth_spec_from_args(*args);
    if (!synth) return fail("synth", synth.error());
    if (gguf) {
        if (Status s = check_gguf_expressible(*synth); !s) return fail("synth", s.error());
        if (same_file_name(*out, *gguf)) return fail("synth", "options -o and --gguf name the same file '" + *gguf + "'");
    }

    CancelToken cancel;
    InterruptGuard guard(cancel);
    auto t0 = Clock::now();
    auto model = make_synth_model(*synth, 0, &cancel);
    if (!model) return fail("synth", model.error());
    std::fprintf(stderr, "generated %s: %.3f B weights, %.1f MiB (%s, seed %llu) in %.2f s\n", synth->name.c_str(),
                 static_cast<double>(model->weight_count) * 1e-9, mib(model->weight_bytes),
                 synth->quant == DType::Q4_0 ? "q4_0" : "q8_0", static_cast<unsigned long long>(synth->seed),
                 seconds_since(t0));

    ConvertOptions options;
    options.weight_quant = synth->quant;  // same type as the blocks: the tiles carry them bit for bit
    const bool vflow = out->size() >= 6 && out->compare(out->size() - 6, 6, ".vflow") == 0;
    options.format = vflow ? ContainerFormat::Vflow : ContainerFormat::Cflow;
    t0 = Clock::now();
    auto report = convert_to_cflow(model->source, *out, options, {}, &cancel);
    if (!report) return fail("synth", report.error());
    std::fprintf(stderr, "wrote %s: %llu bytes, %llu tensors (%llu re-tiled bit-exactly) in %.2f s\n", out->c_str(),
                 static_cast<unsigned long long>(report->file_bytes), static_cast<unsigned long long>(report->tensors),
                 static_cast<unsigned long long>(report->retiled_exact_tensors), seconds_since(t0));

    if (gguf) {
        t0 = Clock::now();
        if (Status s = write_gguf_file(*model, *gguf, cancel); !s) return fail("synth", s.error());
        std::error_code ec;
        const auto bytes = std::filesystem::file_size(*gguf, ec);
        std::fprintf(stderr, "wrote %s: %llu bytes in %.2f s\n", gguf->c_str(),
                     static_cast<unsigned long long>(ec ? 0 : bytes), seconds_since(t0));
        if (!synth->llama_schedule())
            std::fprintf(stderr, "note: %s describes the plain sequential llama model; --combine-style and the "
                                 "delays apply to %s only\n",
                         gguf->c_str(), out->c_str());
    }
    return 0;
}

} // namespace cflow::cli
