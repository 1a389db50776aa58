// Where io_uring_queue_init fails (a seccomp filter here, as in many containers), Auto reads with
// the reader pool and says why, the bytes are still the file's, and an explicit uring request
// fails with Unsupported and the same reason instead of silently running something else.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "io/aligned_bytes.h"
#include "io/async_reader.h"
#include "io_uring_refused.h"
#include "test_support.h"

namespace cflow::test {
namespace {

TEST(AsyncReaderFallback, AutoFallsBackToThreadsWithTheReasonWhenIoUringIsRefused) {
    if (os_async_backend() != IoBackend::Uring) GTEST_SKIP() << "io_uring is the Linux backend";
    constexpr uint64_t kSector = 4096;
    std::vector<uint8_t> file(8 * kSector);  // [8 sectors] of pseudo-random bytes
    std::mt19937 rng(5);
    for (auto& b : file) b = uint8_t(rng());
    const auto path = (temp_dir("fallback") / "data.bin").string();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(file.data()), std::streamsize(file.size()));

    auto unfiltered = AsyncReader::open(path, IoBackend::Uring);
    if (!unfiltered) GTEST_SKIP() << "io_uring is unavailable here even without a filter: " << unfiltered.error();
    unfiltered.value().reset();

    bool auto_ok = false, read_ok = false, bytes_equal = false;
    IoBackend auto_backend = IoBackend::Auto;
    std::string reason, explicit_error;
    ErrorKind explicit_kind = ErrorKind::Internal;
    std::string why;
    const bool ran = run_with_io_uring_refused(
        [&] {
            auto reader = AsyncReader::open(path, IoBackend::Auto);
            auto_ok = reader.ok();
            if (reader) {
                auto_backend = (*reader)->backend();
                reason = (*reader)->fallback_reason();
                auto buffer = AlignedBytes::allocate(kSector, 3 * kSector);  // [3 sectors]
                read_ok = buffer && (*reader)->submit(2 * kSector, 3 * kSector, buffer->data(), 1).ok() &&
                          (*reader)->wait(1).ok();
                bytes_equal = read_ok && std::equal(buffer->data(), buffer->data() + 3 * kSector, file.begin() + 2 * kSector);
            }
            auto forced = AsyncReader::open(path, IoBackend::Uring);
            if (!forced) {
                explicit_kind = forced.kind();
                explicit_error = forced.error();
            }
        },
        why);
    if (!ran) GTEST_SKIP() << why;
    ASSERT_TRUE(auto_ok);
    EXPECT_EQ(auto_backend, IoBackend::Threads);
    std::cout << "[async reader] with io_uring refused, auto fell back: " << reason << "\n";
    EXPECT_NE(reason.find("io_uring_queue_init"), std::string::npos) << reason;
    EXPECT_NE(reason.find(std::strerror(EPERM)), std::string::npos) << reason;
    EXPECT_TRUE(read_ok);
    EXPECT_TRUE(bytes_equal);
    EXPECT_EQ(explicit_kind, ErrorKind::Unsupported) << explicit_error;
    EXPECT_NE(explicit_error.find("io_uring_queue_init"), std::string::npos) << explicit_error;
}

} // namespace
} // namespace cflow::test
