// The sync and staged expert arms read experts with direct I/O into buffers of their own, so the
// file mapping's pages of the expert bank must stay out of the process: the tile headers of a
// streamed expert are checked in the bytes read, not in the mapping. Before, checking them there
// faulted in (with fault-around) nearly every page of each expert used, so RssFile grew to the
// experts used and a cold read fetched each expert twice. Linux: the mapping's own Rss from
// /proc/self/smaps.
#include <fstream>
#include <sstream>
#include <string>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "cflow/engine/io/expert_cache_budget.h"
#include "cflow/formats/converter.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

// Resident bytes of this process's mappings of `path` (its smaps "Rss:" lines); -1 where there
// is no /proc/self/smaps (not Linux).
int64_t mapped_rss_bytes(const std::string& path) {
#ifdef _WIN32
    // Under wine a Windows build can open the Linux /proc/self/smaps, but its mappings are named by
    // Linux paths the test does not know: no answer rather than a wrong one.
    (void)path;
    return -1;
#endif
    std::ifstream smaps("/proc/self/smaps");
    if (!smaps) return -1;
    int64_t total_kb = 0;
    bool inside = false;
    std::string line;
    while (std::getline(smaps, line)) {
        // A mapping's first line: "start-end perms offset dev inode   path".
        const bool header = !line.empty() && line.find('-') < line.find(' ') && line.find(':') > line.find(' ');
        if (header) {
            inside = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
            continue;
        }
        if (inside && line.rfind("Rss:", 0) == 0) {
            std::istringstream fields(line.substr(4));
            int64_t kb = 0;
            fields >> kb;
            total_kb += kb;
        }
    }
    return total_kb * 1024;
}

std::string write_wide_expert_model() {
    SyntheticSpec spec;
    spec.d_model = 128;
    spec.n_heads = 4;
    spec.n_kv_heads = 4;
    spec.head_dim = 32;
    spec.d_ff = 0;
    spec.n_layers = 2;
    spec.n_experts = 16;
    spec.top_k = 2;
    spec.expert_d_ff = 1024;  // ~220 KB per expert in Q4_0: the bank is ~7 MB of a ~7.5 MB file
    auto source = make_synthetic_model(spec);
    const auto path = (temp_dir("streamed_expert_pages") / "model.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::Q4_0;
    auto r = convert_to_cflow(source, path, options);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
    return path;
}

TEST(StreamedExpertPages, SyncAndStagedArmsLeaveTheBanksMappedPagesAlone) {
    const std::string path = write_wide_expert_model();
    if (mapped_rss_bytes(path) < 0) GTEST_SKIP() << "no /proc/self/smaps on this OS: the mapping's resident pages cannot be read";
    for (ExpertFetch arm : {ExpertFetch::Sync, ExpertFetch::Staged, ExpertFetch::Mapped}) {
        SCOPED_TRACE(int(arm));
        auto model = Model::load(path);  // a fresh mapping per arm: nothing resident from the one before
        ASSERT_TRUE(model.ok()) << model.error();
        const uint64_t bank = expert_bank_bytes(**model);
        const uint64_t rest = (*model)->file().file_bytes() - bank;
        ASSERT_GT(bank, 8 * rest) << "the model should be mostly experts";
        SessionOptions options{1, 64};
        options.expert_fetch = arm;
        auto session = Session::create(*model, options);
        if (!session && session.kind() == ErrorKind::Unsupported) GTEST_SKIP() << session.error();
        ASSERT_TRUE(session.ok()) << session.error();
        for (int32_t token : {1, 7, 42, 3, 99, 12, 5, 64, 17, 200, 33, 8})
            ASSERT_TRUE((*session)->step(token).ok());
        const int64_t rss = mapped_rss_bytes(path);
        std::cout << "[streamed expert pages] arm " << int(arm) << ": mapping Rss " << rss / 1024 << " KiB of "
                  << (*model)->file().file_bytes() / 1024 << " KiB (experts " << bank / 1024 << " KiB)\n";
        if (arm == ExpertFetch::Mapped) {
            // The control: the mapped arm computes from the mapping, so the experts it used are resident.
            EXPECT_GT(uint64_t(rss), rest + bank / 4) << "the mapped arm should have the experts it used in memory";
        } else {
            // Everything but the bank may be resident, plus fault-around's 64 KiB at the bank's edges.
            EXPECT_LE(uint64_t(rss), rest + (256u << 10)) << "expert pages were faulted in through the mapping";
        }
    }
}

} // namespace
} // namespace cflow::test
