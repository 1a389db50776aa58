// cflow bench: decode speed of a model from a file mapping and from anonymous memory, each
// compared in the same run with the machine's measured streaming-read bandwidth.
#include <chrono>
#include <cstdio>

#include "cflow/engine/bandwidth_probe.h"
#include "cflow/engine/model.h"
#include "cflow/engine/session.h"
#include "cli_args.h"
#include "commands.h"

namespace cflow::cli {
namespace {

struct DecodeMeasurement {
    double tokensPerSecond = 0;
    double bytesPerToken = 0;  // weight bytes the engine read per token, all streams
};

Result<DecodeMeasurement> measure(const std::string& path, LoadMode mode, unsigned threads, int warmup, int tokens) {
    LoadOptions load;
    load.mode = mode;
    auto model = Model::load(path, load);
    if (!model) return model.take_error();
    const uint32_t ctx = uint32_t(warmup + tokens + 1);
    auto session = Session::create(model.value(), SessionOptions{threads, ctx});
    if (!session) return session.take_error();
    const int32_t vocab = int32_t((*model)->header().vocab_size);
    int32_t token = (*model)->tokenizer().bos_id() >= 0 ? (*model)->tokenizer().bos_id() : 0;
    auto next = [&](std::span<const float> logits) {
        // Greedy, so every run decodes the same sequence.
        int32_t best = 0;
        for (int32_t i = 1; i < vocab; ++i)
            if (logits[i] > logits[best]) best = i;
        return best;
    };
    for (int i = 0; i < warmup; ++i) {
        auto r = (*session)->step(token);
        if (!r) return r.take_error();
        token = next(*r);
    }
    double bytes = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < tokens; ++i) {
        auto r = (*session)->step(token);
        if (!r) return r.take_error();
        token = next(*r);
        const TokenTelemetry& t = (*session)->telemetry();
        for (size_t s = 0; s < size_t(Stream::Count_); ++s) bytes += double(t.bytes(Stream(s)));
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return DecodeMeasurement{tokens / seconds, bytes / tokens};
}

} // namespace

int run_bench(const std::vector<std::string>& argv) {
    auto args = Args::parse(argv, ArgSpec{{"--threads", "--tokens", "--warmup"}, {}});
    if (!args) return fail("bench", args.error());
    if (args->positionals().size() != 1) return fail("bench", "expected exactly one MODEL.cflow");
    auto threads = args->integer("--threads", 0, 0, 1024);
    auto tokens = args->integer("--tokens", 64, 1, 100000);
    auto warmup = args->integer("--warmup", 8, 0, 100000);
    if (!threads) return fail("bench", threads.error());
    if (!tokens) return fail("bench", tokens.error());
    if (!warmup) return fail("bench", warmup.error());
    const std::string path = args->positionals()[0];

    ThreadPool pool{unsigned(*threads)};
    const BandwidthProbeResult probe = probe_read_bandwidth(pool);
    std::printf("measured read bandwidth: %.2f GB/s (%u threads, %llu MiB buffer)\n", probe.bytesPerSecond / 1e9,
                probe.threads, (unsigned long long)(probe.bufferBytes >> 20));
    DecodeMeasurement results[2];
    const LoadMode modes[2] = {LoadMode::Map, LoadMode::ReadAnon};
    const char* names[2] = {"map (page cache)", "read (anonymous memory)"};
    for (int m = 0; m < 2; ++m) {
        auto r = measure(path, modes[m], unsigned(*threads), int(*warmup), int(*tokens));
        if (!r) return fail("bench", r.error());
        results[m] = *r;
        const double achieved = r->tokensPerSecond * r->bytesPerToken;
        std::printf("%-24s %9.2f tok/s  %8.3f MiB/token  %7.2f GB/s  ratio achieved/measured = %.3f\n", names[m],
                    r->tokensPerSecond, r->bytesPerToken / (1 << 20), achieved / 1e9, achieved / probe.bytesPerSecond);
    }
    std::printf("ratio read/map decode speed = %.3f\n", results[1].tokensPerSecond / results[0].tokensPerSecond);
    return 0;
}

} // namespace cflow::cli
