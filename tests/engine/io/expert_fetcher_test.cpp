// ExpertFetcher over each read backend: expert ranges at any byte offset come back as the file's
// bytes through the sector-aligned staging buffers; a ticket released before its wait (a step that
// failed between routing and injection) frees its slot only once the read has landed, and later
// tickets still read right; the cache hit path serves the same bytes; a file that shrank fails
// the wait with Io; destroying the fetcher with reads in flight is clean.
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "io/expert_fetcher.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::vector<uint8_t> fetcher_random_bytes(uint64_t bytes, uint32_t seed) {
    std::vector<uint8_t> data(bytes);  // [bytes]
    std::mt19937 rng(seed);
    for (auto& b : data) b = uint8_t(rng());
    return data;
}

std::string write_experts_file(const std::string& name, const std::vector<uint8_t>& data) {
    const auto path = (temp_dir(name) / "experts.bin").string();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
    return path;
}

class ExpertFetcherTest : public ::testing::TestWithParam<IoBackend> {
protected:
    std::unique_ptr<ExpertFetcher> create_or_skip(const std::string& path, std::shared_ptr<ExpertCache> cache = nullptr) {
        ExpertFetcherOptions options;
        options.backend = GetParam();
        options.readsInFlight = 4;
        auto f = ExpertFetcher::create(path, options, std::move(cache));
        if (!f && f.kind() == ErrorKind::Unsupported) {
            std::cout << "[expert fetcher] " << io_backend_name(GetParam()) << " unavailable here: " << f.error() << "\n";
            return nullptr;
        }
        EXPECT_TRUE(f.ok()) << f.error();
        if (f) {
            EXPECT_EQ((*f)->backend(), GetParam());
        }
        return f ? std::move(f).value() : nullptr;
    }
};

#define CREATE_OR_SKIP(var, ...)                                                      \
    auto var = create_or_skip(__VA_ARGS__);                                           \
    if (!var) {                                                                       \
        if (HasFailure()) return;                                                     \
        GTEST_SKIP() << io_backend_name(GetParam()) << " cannot run here (see above)"; \
    }

struct Expert {
    uint64_t offset, bytes;
};

// Ranges at odd offsets and lengths, as experts lie in a .cflow file (tiles are not sector-aligned).
std::vector<Expert> experts_of(uint64_t file_bytes, int count, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<Expert> experts;
    for (int i = 0; i < count; ++i) {
        const uint64_t bytes = 1 + rng() % 200000;
        experts.push_back({rng() % (file_bytes - bytes), bytes});
    }
    return experts;
}

bool same_bytes(const uint8_t* staged, const std::vector<uint8_t>& file, const Expert& e) {
    return std::equal(file.begin() + ptrdiff_t(e.offset), file.begin() + ptrdiff_t(e.offset + e.bytes), staged);
}

TEST_P(ExpertFetcherTest, ExpertRangesAtAnyOffsetComeBackAsTheFilesBytes) {
    const auto file = fetcher_random_bytes(4 * 1024 * 1024 + 321, 17);
    const auto path = write_experts_file("ranges", file);
    CREATE_OR_SKIP(fetcher, path);
    const auto experts = experts_of(file.size(), 60, 3);
    for (size_t first = 0; first < experts.size(); first += 6) {  // 6 in flight, more than readsInFlight
        std::vector<uint32_t> tickets;
        for (size_t i = first; i < first + 6; ++i) tickets.push_back(fetcher->request(uint32_t(i), experts[i].offset, experts[i].bytes).id);
        for (size_t j = tickets.size(); j-- > 0;) {  // waited for last-first
            float waited_us = 0;
            auto staged = fetcher->wait(tickets[j], waited_us);
            ASSERT_TRUE(staged.ok()) << staged.error();
            EXPECT_TRUE(same_bytes(*staged, file, experts[first + j])) << "expert " << first + j;
            EXPECT_GE(waited_us, 0.0f);
        }
        for (uint32_t t : tickets) fetcher->release(t);
    }
}

TEST_P(ExpertFetcherTest, AReleaseBeforeTheWaitKeepsTheSlotUntilTheReadLands) {
    const auto file = fetcher_random_bytes(8 * 1024 * 1024, 23);
    const auto path = write_experts_file("abandon", file);
    CREATE_OR_SKIP(fetcher, path);
    const auto experts = experts_of(file.size(), 40, 9);
    for (size_t i = 0; i + 4 <= experts.size(); i += 4) {
        // Two reads abandoned in flight, two waited for: the abandoned ones' buffers must not be
        // handed to the next requests while the reads still write into them.
        const auto a = fetcher->request(1, experts[i].offset, experts[i].bytes).id;
        const auto b = fetcher->request(2, experts[i + 1].offset, experts[i + 1].bytes).id;
        fetcher->release(a);
        fetcher->release(b);
        const auto c = fetcher->request(3, experts[i + 2].offset, experts[i + 2].bytes).id;
        const auto d = fetcher->request(4, experts[i + 3].offset, experts[i + 3].bytes).id;
        float waited_us = 0;
        for (auto [ticket, e] : {std::pair{c, experts[i + 2]}, std::pair{d, experts[i + 3]}}) {
            auto staged = fetcher->wait(ticket, waited_us);
            ASSERT_TRUE(staged.ok()) << staged.error();
            EXPECT_TRUE(same_bytes(*staged, file, e)) << "round " << i / 4;
            fetcher->release(ticket);
        }
    }
}

TEST_P(ExpertFetcherTest, ACacheHitServesTheSameBytesWithoutARead) {
    const auto file = fetcher_random_bytes(2 * 1024 * 1024, 29);
    const auto path = write_experts_file("cache", file);
    auto cache = std::make_shared<ExpertCache>(64ull << 20);
    CREATE_OR_SKIP(fetcher, path, cache);
    const Expert e{12345, 100000};
    float waited_us = 0;
    const auto miss = fetcher->request(7, e.offset, e.bytes);
    EXPECT_FALSE(miss.fromCache);
    ASSERT_TRUE(fetcher->wait(miss.id, waited_us).ok());
    fetcher->release(miss.id);  // offered to the cache
    const auto hit = fetcher->request(7, e.offset, e.bytes);
    EXPECT_TRUE(hit.fromCache);
    auto staged = fetcher->wait(hit.id, waited_us);
    ASSERT_TRUE(staged.ok()) << staged.error();
    EXPECT_TRUE(same_bytes(*staged, file, e));
    fetcher->release(hit.id);
}

TEST_P(ExpertFetcherTest, AShrunkFileFailsTheWaitWithIo) {
    const auto file = fetcher_random_bytes(1024 * 1024, 31);
    const auto path = write_experts_file("shrunk", file);
    CREATE_OR_SKIP(fetcher, path);
    std::error_code shrinkError;
    std::filesystem::resize_file(path, 10000, shrinkError);
    if (shrinkError) GTEST_SKIP() << "this OS refuses to shrink a file that is open (" << shrinkError.message() << ")";
    const auto t = fetcher->request(1, 500000, 4000).id;
    float waited_us = 0;
    auto staged = fetcher->wait(t, waited_us);
    ASSERT_FALSE(staged.ok());
    EXPECT_EQ(staged.kind(), ErrorKind::Io) << staged.error();
    EXPECT_NE(staged.error().find("did it shrink"), std::string::npos) << staged.error();
    fetcher->release(t);
}

TEST_P(ExpertFetcherTest, DestroyingWithReadsInFlightIsClean) {
    const auto file = fetcher_random_bytes(16 * 1024 * 1024, 37);
    const auto path = write_experts_file("destroy", file);
    for (int attempt = 0; attempt < 4; ++attempt) {
        CREATE_OR_SKIP(fetcher, path);
        const auto experts = experts_of(file.size(), 24, uint32_t(attempt));
        for (size_t i = 0; i < experts.size(); ++i) (void)fetcher->request(uint32_t(i), experts[i].offset, experts[i].bytes);
        // Destroyed here with every read outstanding: the reader cancels or finishes them before
        // the staging buffers go (ASan/TSan runs would see a late write into freed memory).
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, ExpertFetcherTest, ::testing::Values(IoBackend::Threads, IoBackend::Uring, IoBackend::Overlapped),
                         [](const ::testing::TestParamInfo<IoBackend>& param) {
                             return std::string(io_backend_name(param.param));
                         });

} // namespace
} // namespace cflow::test
