// cflow bench experts: the three expert-fetch arms on one model (paper 3.9.4, Table 5.6):
// mapped (page cache), sync (direct I/O waited for at the routing layer: the stall arm) and
// staged (the same reads waited for at the injection layer, overlapping the layers between).
// Per arm: tok/s, compute ms/token (C, layer compute without expert waits), stall ms/token, and
// for the staged arm the model's prediction of its speedup over sync, (C + IO) / max(C, IO),
// next to the measured one, with IO the sync arm's stall. Arms alternate token blocks over
// --rounds so a noisy machine affects all three alike. The greedy tokens must match across arms.
// --cache-mib M|fit gives sync and staged an expert cache in RAM (the mapped arm has the page
// cache): per arm the hit rate and the expert bytes read from storage and served from RAM per token.
// --io-backend picks how sync and staged reach the OS (io_uring, overlapped I/O, the reader pool);
// every line names the backend that ran (io_backend), and the sync line the read bandwidth its
// blocking reads achieved: expert bytes read from storage over the time blocked on them.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/generation/timed_decode.h"
#include "cflow/engine/kernels/kernels.h"
#include "commands.h"
#include "expert_fetch_args.h"

namespace cflow::cli {
namespace {

struct ArmTotals {
    ExpertFetch arm = ExpertFetch::Mapped;
    std::unique_ptr<Session> session;
    int32_t next = 0;    // the token to feed next
    DecodeTotals totals; // the timed steps; totals.emitted is compared across arms
};

Status run_tokens(ArmTotals& arm, int count, bool timed) {
    return greedy_decode_steps(*arm.session, arm.next, count, timed ? &arm.totals : nullptr);
}

} // namespace

int run_bench_experts(const BenchExpertsArgs& args) {
    if (args.positionals.size() != 1) return fail("bench experts", "expected exactly one MODEL.cflow");
    const int tokens = args.tokens, warmup = args.warmup, rounds = args.rounds;
    const std::optional<CacheSizeArg>& cache_mib = args.session.cache_mib;
    const std::string path = args.positionals[0];
    auto model = Model::load(path);
    if (!model) return fail("bench experts", model.error());
    if ((*model)->header().n_experts == 0) return fail("bench experts", path + " has no experts (a dense model)");

    // The arms alternate, so sync's and staged's caches are held at once: 'fit' splits what it
    // finds between them rather than giving each half of the free memory (all of it together).
    uint64_t cache_bytes = cache_mib ? resolve_cache_bytes(*cache_mib, **model) : 0;
    if (cache_mib && cache_mib->fit) cache_bytes /= 2;
    const int per_round = std::max(1, tokens / rounds);
    const auto ctx = uint32_t(warmup + per_round * rounds + 2);
    std::vector<ArmTotals> arms(3);
    const ExpertFetch order[3] = {ExpertFetch::Mapped, ExpertFetch::Sync, ExpertFetch::Staged};
    bool direct = true;
    for (size_t a = 0; a < 3; ++a) {
        SessionOptions options{args.session.threads, ctx};
        options.expert_fetch = order[a];
        options.fetch_threads = unsigned(args.fetch_threads);
        options.io_backend = args.session.io_backend;
        if (order[a] != ExpertFetch::Mapped) options.expert_cache_bytes = cache_bytes;
        auto session = Session::create(model.value(), options);
        if (!session) return fail("bench experts", std::string(expert_fetch_name(order[a])) + ": " + session.error());
        arms[a].arm = order[a];
        arms[a].session = std::move(session).value();
        arms[a].next = 1;  // every arm starts from the same token
        if (order[a] != ExpertFetch::Mapped) direct = direct && arms[a].session->staged_direct_io();
        if (Status s = run_tokens(arms[a], warmup, false); !s) return fail("bench experts", s.error());
    }
    for (int round = 0; round < rounds; ++round)
        for (ArmTotals& arm : arms)
            if (Status s = run_tokens(arm, per_round, true); !s)
                return fail("bench experts", std::string(expert_fetch_name(arm.arm)) + ": " + s.error());

    const auto per_token_ms = [](const ArmTotals& a, double us) { return us / 1000.0 / std::max(1, a.totals.tokens); };
    const ArmTotals& mapped = arms[0];
    const ArmTotals& sync = arms[1];
    const ArmTotals& staged = arms[2];
    const double c_ms = mapped.totals.seconds * 1000.0 / std::max(1, mapped.totals.tokens);  // the whole step from the page cache
    const double io_ms = per_token_ms(sync, sync.totals.expertStallUs);
    const double predicted = (c_ms + io_ms) / std::max({c_ms, io_ms, 1e-9});
    const double sync_tps = sync.totals.tokens / std::max(sync.totals.seconds, 1e-9);
    const double staged_tps = staged.totals.tokens / std::max(staged.totals.seconds, 1e-9);
    const double measured = staged_tps / std::max(sync_tps, 1e-9);
    const double hidden = sync.totals.expertStallUs > 0 ? 1.0 - staged.totals.expertStallUs / sync.totals.expertStallUs : 0.0;
    // The paper's refined model (5.14.2-5.14.3): reads running beneath the compute slow it by an
    // interference tax tau (memory-subsystem contention), so staged pins at max((1 + tau) C, IO).
    // tau is measured here as the staged arm's compute over the mapped arm's (same tokens, same
    // arithmetic; only the concurrent reads differ), never fitted to the speedup.
    const double mapped_compute = per_token_ms(mapped, mapped.totals.computeUs);
    const double tau = mapped_compute > 0 ? per_token_ms(staged, staged.totals.computeUs) / mapped_compute - 1.0 : 0.0;
    const double predicted_taxed = (c_ms + io_ms) / std::max({(1.0 + tau) * c_ms, io_ms, 1e-9});
    const bool identical = mapped.totals.emitted == sync.totals.emitted && mapped.totals.emitted == staged.totals.emitted;
    const std::string isa(isa_name(selected_isa()));
    // Sync and staged open their readers alike, so they run the same backend.
    const std::optional<IoBackend> backend_ran = sync.session->io_backend();
    const std::string backend_name = backend_ran ? std::string(io_backend_name(*backend_ran)) : "none";
    const std::string backend_note = sync.session->io_backend_note();
    // Sync blocks on every read it issues, so its stall is the reads' own time (top_k at once).
    const double read_mb_per_second = sync.totals.expertStallUs > 0 ? sync.totals.expertBytesFromDisk / sync.totals.expertStallUs : 0.0;

    for (const ArmTotals& arm : arms) {
        const double tps = arm.totals.tokens / std::max(arm.totals.seconds, 1e-9);
        const double arm_cache_mib = double(arm.session->expert_cache_bytes()) / double(1 << 20);
        const uint64_t lookups = arm.totals.expertCacheHits + arm.totals.expertCacheMisses;
        const double hit_rate = lookups ? double(arm.totals.expertCacheHits) / double(lookups) : 0.0;
        const double read_per_token = arm.totals.expertBytesFromDisk / std::max(1, arm.totals.tokens);
        const double saved_per_token = arm.totals.expertBytesSaved / std::max(1, arm.totals.tokens);
        nlohmann::json line = {{"arm", std::string(expert_fetch_name(arm.arm))},
                               {"tokens", arm.totals.tokens},
                               {"tokens_per_second", tps},
                               {"ms_per_token", 1000.0 / std::max(tps, 1e-9)},
                               {"compute_ms_per_token", per_token_ms(arm, arm.totals.computeUs)},
                               {"io_ms_per_token", arm.arm == ExpertFetch::Mapped ? 0.0 : io_ms},
                               {"stall_ms_per_token", per_token_ms(arm, arm.totals.expertStallUs)},
                               {"expert_bytes_per_token", arm.totals.bytes(Stream::Expert) / std::max(1, arm.totals.tokens)},
                               {"isa", isa},
                               {"threads", arm.session->threads()},
                               {"direct_io", arm.arm != ExpertFetch::Mapped && direct},
                               {"cache_mib", arm_cache_mib},
                               {"cache_hit_rate", hit_rate},
                               {"expert_bytes_read_per_token", read_per_token},
                               {"expert_bytes_saved_per_token", saved_per_token},
                               {"outputs_identical", identical},
                               {"io_backend", arm.arm == ExpertFetch::Mapped ? std::string("none") : backend_name}};
        if (arm.arm != ExpertFetch::Mapped && !backend_note.empty()) line["io_backend_note"] = backend_note;
        if (arm.arm == ExpertFetch::Sync) line["read_mb_per_second"] = read_mb_per_second;
        if (arm.arm == ExpertFetch::Staged) {
            line["predicted_speedup"] = predicted;
            line["measured_speedup"] = measured;
            line["hidden_stall_share"] = hidden;
            line["measured_over_predicted"] = predicted > 0 ? measured / predicted : 0.0;
            line["interference_tax"] = tau;
            line["predicted_speedup_with_interference"] = predicted_taxed;
            line["measured_over_predicted_with_interference"] = predicted_taxed > 0 ? measured / predicted_taxed : 0.0;
        }
        if (args.json) {
            std::printf("%s\n", line.dump().c_str());
        } else {
            std::printf("%-7s %8.2f tok/s  %8.2f ms/token  compute %7.2f ms  stall %7.2f ms  experts %7.2f MiB/token",
                        std::string(expert_fetch_name(arm.arm)).c_str(), tps, 1000.0 / std::max(tps, 1e-9),
                        per_token_ms(arm, arm.totals.computeUs), per_token_ms(arm, arm.totals.expertStallUs),
                        arm.totals.bytes(Stream::Expert) / std::max(1, arm.totals.tokens) / (1 << 20));
            if (arm.arm != ExpertFetch::Mapped)
                std::printf("  read %7.2f MiB/token  cache %.0f MiB hit %5.1f%% saved %7.2f MiB/token", read_per_token / (1 << 20),
                            arm_cache_mib, 100.0 * hit_rate, saved_per_token / (1 << 20));
            if (arm.arm == ExpertFetch::Sync) std::printf("  reads at %.0f MB/s", read_mb_per_second);
            std::printf("\n");
        }
    }
    if (!args.json)
        std::printf("C %.2f ms/token (mapped), IO %.2f ms/token (sync stall); staged over sync: predicted (C+IO)/max(C,IO) "
                    "= %.3f, measured %.3f (%.3f of the prediction); with the interference tax tau = %.3f (staged "
                    "compute over mapped) (C+IO)/max((1+tau)C,IO) = %.3f (%.3f of it); staged hides %.1f%% of the sync "
                    "stall; %s through %s%s%s; greedy tokens %s across the arms (%s, %u threads)\n",
                    c_ms, io_ms, predicted, measured, predicted > 0 ? measured / predicted : 0.0, tau, predicted_taxed,
                    predicted_taxed > 0 ? measured / predicted_taxed : 0.0, 100.0 * hidden,
                    direct ? "direct I/O" : "buffered reads (the file system refused O_DIRECT)", backend_name.c_str(),
                    backend_note.empty() ? "" : " (", backend_note.empty() ? "" : (backend_note + ")").c_str(),
                    identical ? "identical" : "DIFFER", isa.c_str(), arms[0].session->threads());
    return identical ? 0 : 1;
}

} // namespace cflow::cli
