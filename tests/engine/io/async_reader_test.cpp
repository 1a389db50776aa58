// AsyncReader, every backend (io_uring, overlapped I/O, the reader pool, and what Auto picks):
// the bytes of many random aligned ranges, read with many requests in flight, equal the file's;
// the tail of the file reads as far as the file goes; a file that shrank gives an Io error naming
// the offset instead of stale bytes; misuse is InvalidInput; destroying the reader with reads in
// flight leaves no read writing afterwards. A backend this OS or kernel cannot run skips, naming why.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "io/aligned_bytes.h"
#include "io/async_reader.h"
#include "test_support.h"

namespace cflow::test {
namespace {

constexpr uint64_t kSector = 4096;

// [bytes] pseudo-random bytes, the same for every run of a seed.
std::vector<uint8_t> random_bytes(uint64_t bytes, uint32_t seed) {
    std::vector<uint8_t> data(bytes);
    std::mt19937 rng(seed);
    for (auto& b : data) b = uint8_t(rng());
    return data;
}

std::string write_file(const std::string& name, const std::vector<uint8_t>& data) {
    const auto path = (temp_dir(name) / "data.bin").string();
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
    return path;
}

class AsyncReaderTest : public ::testing::TestWithParam<IoBackend> {
protected:
    // The reader, or nullptr after GTEST_SKIP (this backend cannot run here) or a failure.
    std::unique_ptr<AsyncReader> open_or_skip(const std::string& path, AsyncReaderOptions options = {}) {
        auto reader = AsyncReader::open(path, GetParam(), options);
        if (!reader && reader.kind() == ErrorKind::Unsupported) {
            std::cout << "[async reader] " << io_backend_name(GetParam()) << " unavailable here: " << reader.error() << "\n";
            return nullptr;
        }
        EXPECT_TRUE(reader.ok()) << reader.error();
        if (!reader) return nullptr;
        std::cout << "[async reader] " << io_backend_name(GetParam()) << " runs " << io_backend_name((*reader)->backend())
                  << ((*reader)->direct() ? ", direct I/O" : ", buffered (direct I/O refused here)")
                  << ((*reader)->fallback_reason().empty() ? "" : "; fell back: " + (*reader)->fallback_reason()) << "\n";
        if (GetParam() != IoBackend::Auto) {
            EXPECT_EQ((*reader)->backend(), GetParam());
        }
        return std::move(reader).value();
    }
};

#define OPEN_OR_SKIP(var, ...)                                                        \
    auto var = open_or_skip(__VA_ARGS__);                                             \
    if (!var) {                                                                       \
        if (HasFailure()) return;                                                     \
        GTEST_SKIP() << io_backend_name(GetParam()) << " cannot run here (see above)"; \
    }

struct Range {
    uint64_t offset;
    uint64_t bytes;
    std::shared_ptr<AlignedBytes> buffer;  // [bytes] bytes, sector-aligned
};

// The bytes a read of `r` must deliver: the file's, up to its end.
void expect_range_matches(const Range& r, const std::vector<uint8_t>& file, const std::string& what) {
    const uint64_t end = std::min<uint64_t>(r.offset + r.bytes, file.size());
    ASSERT_LE(r.offset, end) << what;
    ASSERT_TRUE(std::equal(file.begin() + ptrdiff_t(r.offset), file.begin() + ptrdiff_t(end), r.buffer->data()))
        << what << ": bytes at offset " << r.offset << " (+" << r.bytes << ") differ from the file";
}

TEST_P(AsyncReaderTest, RandomAlignedRangesInFlightTogetherMatchTheFile) {
    // 6 MiB and a partial last sector, so some ranges run into the tail.
    const auto file = random_bytes(6 * 1024 * 1024 + 1234, 7);
    const auto path = write_file("random", file);
    AsyncReaderOptions options;
    options.queueDepth = 8;  // fewer than the reads in flight below: the excess waits in the reader
    OPEN_OR_SKIP(reader, path, options);
    EXPECT_EQ(reader->file_bytes(), file.size());
    std::mt19937 rng(11);
    const uint64_t sectors = (file.size() + kSector - 1) / kSector;
    for (int batch = 0; batch < 25; ++batch) {
        std::vector<Range> ranges;
        const int in_flight = 1 + int(rng() % 24);
        for (int i = 0; i < in_flight; ++i) {
            const uint64_t first = rng() % sectors;
            const uint64_t count = 1 + rng() % std::min<uint64_t>(64, sectors - first);  // stays within the last sector
            Range r{first * kSector, count * kSector, AlignedBytes::allocate(kSector, count * kSector)};
            ASSERT_TRUE(r.buffer);
            std::fill(r.buffer->data(), r.buffer->data() + r.bytes, uint8_t(0xA5));
            ASSERT_TRUE(reader->submit(r.offset, r.bytes, r.buffer->data(), uint64_t(batch * 100 + i)).ok());
            ranges.push_back(std::move(r));
        }
        // Waited for in a shuffled order: completions of other reads must be kept for their own wait.
        std::vector<int> order(static_cast<size_t>(in_flight));
        for (int i = 0; i < in_flight; ++i) order[size_t(i)] = i;
        std::shuffle(order.begin(), order.end(), rng);
        for (int i : order) {
            Status st = reader->wait(uint64_t(batch * 100 + i));
            ASSERT_TRUE(st.ok()) << st.error();
            expect_range_matches(ranges[size_t(i)], file, "batch " + std::to_string(batch));
        }
    }
}

TEST_P(AsyncReaderTest, ReapCollectsEveryReadOnceWithoutBlocking) {
    const auto file = random_bytes(2 * 1024 * 1024, 3);
    const auto path = write_file("reap", file);
    AsyncReaderOptions options;
    options.queueDepth = 4;
    OPEN_OR_SKIP(reader, path, options);
    std::vector<Range> ranges;
    for (uint64_t i = 0; i < 32; ++i) {
        Range r{i * 16 * kSector, 16 * kSector, AlignedBytes::allocate(kSector, 16 * kSector)};
        ASSERT_TRUE(r.buffer);
        ASSERT_TRUE(reader->submit(r.offset, r.bytes, r.buffer->data(), 1000 + i).ok());
        ranges.push_back(std::move(r));
    }
    std::vector<int> seen(ranges.size(), 0);
    std::vector<ReadCompletion> completed;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    size_t collected = 0;
    while (collected < ranges.size() && std::chrono::steady_clock::now() < deadline) {
        completed.clear();
        reader->reap(completed);
        for (const ReadCompletion& c : completed) {
            ASSERT_GE(c.tag, 1000u);
            ASSERT_LT(c.tag, 1000u + ranges.size());
            ASSERT_TRUE(c.status.ok()) << c.status.error();
            ++seen[c.tag - 1000];
            ++collected;
        }
        if (collected < ranges.size()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(collected, ranges.size()) << "reads still outstanding after 60 s of reaping";
    for (size_t i = 0; i < ranges.size(); ++i) {
        EXPECT_EQ(seen[i], 1) << "read " << i;
        expect_range_matches(ranges[i], file, "read " + std::to_string(i));
    }
    EXPECT_EQ(reader->wait(1000).kind(), ErrorKind::InvalidInput);  // reaped: no longer in flight
}

TEST_P(AsyncReaderTest, TheTailOfTheFileReadsAsFarAsTheFileGoes) {
    const auto file = random_bytes(5 * kSector + 777, 5);  // the last sector holds 777 bytes
    const auto path = write_file("tail", file);
    OPEN_OR_SKIP(reader, path);
    // The last sector alone, and the last three sectors: both end past the file's last byte.
    for (auto [first, count] : {std::pair<uint64_t, uint64_t>{5, 1}, {3, 3}, {0, 6}}) {
        Range r{first * kSector, count * kSector, AlignedBytes::allocate(kSector, count * kSector)};
        ASSERT_TRUE(r.buffer);
        ASSERT_TRUE(reader->submit(r.offset, r.bytes, r.buffer->data(), first).ok());
        Status st = reader->wait(first);
        ASSERT_TRUE(st.ok()) << st.error();
        expect_range_matches(r, file, "tail from sector " + std::to_string(first));
    }
}

TEST_P(AsyncReaderTest, AFileThatShrankIsAnIoErrorNamingTheOffset) {
    const auto file = random_bytes(16 * kSector, 9);
    const auto path = write_file("shrunk", file);
    OPEN_OR_SKIP(reader, path);
    // Shrinks to 3 sectors and 100 bytes after the reader learnt its size.
    std::error_code shrinkError;
    std::filesystem::resize_file(path, 3 * kSector + 100, shrinkError);
    if (shrinkError) GTEST_SKIP() << "this OS refuses to shrink a file that is open (" << shrinkError.message() << ")";
    struct Case {
        uint64_t offset, bytes;
        uint64_t endedAt;  // where the file now ends inside the range
    };
    for (const Case c : {Case{8 * kSector, kSector, 8 * kSector}, Case{2 * kSector, 4 * kSector, 3 * kSector + 100}}) {
        auto buffer = AlignedBytes::allocate(kSector, c.bytes);
        ASSERT_TRUE(buffer);
        ASSERT_TRUE(reader->submit(c.offset, c.bytes, buffer->data(), 1).ok());
        Status st = reader->wait(1);
        ASSERT_FALSE(st.ok()) << "a read past the new end of the file must fail, offset " << c.offset;
        EXPECT_EQ(st.kind(), ErrorKind::Io) << st.error();
        EXPECT_NE(st.error().find(path), std::string::npos) << st.error();
        EXPECT_NE(st.error().find("at offset " + std::to_string(c.offset)), std::string::npos) << st.error();
        EXPECT_NE(st.error().find("ended at byte " + std::to_string(c.endedAt)), std::string::npos) << st.error();
    }
}

TEST_P(AsyncReaderTest, MisuseIsInvalidInputAndQueuesNothing) {
    const auto file = random_bytes(4 * kSector, 1);
    const auto path = write_file("misuse", file);
    OPEN_OR_SKIP(reader, path);
    auto buffer = AlignedBytes::allocate(kSector, 2 * kSector);
    ASSERT_TRUE(buffer);
    EXPECT_EQ(reader->wait(42).kind(), ErrorKind::InvalidInput);  // never submitted
    ASSERT_TRUE(reader->submit(0, kSector, buffer->data(), 7).ok());
    EXPECT_EQ(reader->submit(kSector, kSector, buffer->data() + kSector, 7).kind(), ErrorKind::InvalidInput);  // tag in flight
    ASSERT_TRUE(reader->wait(7).ok());
    EXPECT_EQ(reader->wait(7).kind(), ErrorKind::InvalidInput);  // already waited for
    if (reader->direct()) {
        EXPECT_EQ(reader->submit(100, kSector, buffer->data(), 8).kind(), ErrorKind::InvalidInput);
        EXPECT_EQ(reader->submit(0, 100, buffer->data(), 8).kind(), ErrorKind::InvalidInput);
        EXPECT_EQ(reader->submit(0, kSector, buffer->data() + 1, 8).kind(), ErrorKind::InvalidInput);
        EXPECT_EQ(reader->wait(8).kind(), ErrorKind::InvalidInput);  // none of them was queued
    }
}

// Destroying a reader with reads in flight must cancel or finish them before it returns: a read
// that landed afterwards would overwrite memory its owner has already reused.
TEST_P(AsyncReaderTest, DestroyingWithReadsInFlightLeavesNoLateWrites) {
    const auto file = random_bytes(16 * 1024 * 1024, 13);
    const auto path = write_file("destroy", file);
    constexpr uint64_t kReadBytes = 1024 * 1024;
    for (int attempt = 0; attempt < 4; ++attempt) {
        std::vector<std::shared_ptr<AlignedBytes>> buffers;
        {
            AsyncReaderOptions options;
            options.queueDepth = 4;  // some in the kernel, some still waiting in the reader
            OPEN_OR_SKIP(reader, path, options);
            for (uint64_t i = 0; i < 16; ++i) {
                buffers.push_back(AlignedBytes::allocate(kSector, kReadBytes));
                ASSERT_TRUE(buffers.back());
                ASSERT_TRUE(reader->submit(i * kReadBytes, kReadBytes, buffers.back()->data(), i).ok());
            }
        }  // destroyed with (most of) the reads in flight
        for (auto& b : buffers) std::fill(b->data(), b->data() + b->size(), uint8_t(0x5A));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        for (size_t i = 0; i < buffers.size(); ++i)
            ASSERT_TRUE(std::all_of(buffers[i]->data(), buffers[i]->data() + kReadBytes, [](uint8_t b) { return b == 0x5A; }))
                << "read " << i << " wrote into its buffer after the reader was destroyed (attempt " << attempt << ")";
    }
}

INSTANTIATE_TEST_SUITE_P(Backends, AsyncReaderTest,
                         ::testing::Values(IoBackend::Threads, IoBackend::Uring, IoBackend::Overlapped, IoBackend::Auto),
                         [](const ::testing::TestParamInfo<IoBackend>& param) {
                             return std::string(io_backend_name(param.param));
                         });

TEST(AsyncReader, AnotherOsBackendIsUnsupportedAndSaysWhich) {
    const auto path = write_file("other_os", random_bytes(kSector, 2));
    const IoBackend other = os_async_backend() == IoBackend::Uring ? IoBackend::Overlapped : IoBackend::Uring;
    auto reader = AsyncReader::open(path, other);
    ASSERT_FALSE(reader.ok());
    EXPECT_EQ(reader.kind(), ErrorKind::Unsupported) << reader.error();
    EXPECT_NE(reader.error().find(std::string(io_backend_name(other))), std::string::npos) << reader.error();
}

TEST(AsyncReader, AMissingFileIsAnIoErrorForEveryBackend) {
    const auto path = (temp_dir("missing") / "absent.bin").string();
    for (IoBackend b : {IoBackend::Auto, IoBackend::Threads, os_async_backend()}) {
        auto reader = AsyncReader::open(path, b);
        ASSERT_FALSE(reader.ok()) << io_backend_name(b);
        // Auto must not hide a missing file behind a fallback, nor an OS backend call it Unsupported.
        if (reader.kind() == ErrorKind::Unsupported) continue;  // the OS backend is unavailable here
        EXPECT_EQ(reader.kind(), ErrorKind::Io) << reader.error();
        EXPECT_NE(reader.error().find(path), std::string::npos) << reader.error();
    }
}

} // namespace
} // namespace cflow::test
