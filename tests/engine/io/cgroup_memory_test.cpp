// apply_cgroup_limits against cgroup trees written by the test (v1, v2, nested, namespaced,
// hybrid): the tightest level wins, inactive page cache counts as free, "max" and v1's huge
// "no limit" are no limit, and unreadable files change nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cflow/engine/io/system_memory.h"
#include "test_support.h"

namespace cflow::test {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMiB = uint64_t{1} << 20;

void write(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
}

SystemMemory machine() {
    SystemMemory m;
    m.total_bytes = 24 * 1024 * kMiB;
    m.available_bytes = 20 * 1024 * kMiB;
    return m;
}

TEST(CgroupMemory, V2TightestLevelAndReclaimableCache) {
    const fs::path root = temp_dir("cgroup-v2");
    write(root / "memory.max", "max\n");  // the root never limits
    write(root / "user.slice/memory.max", std::to_string(2048 * kMiB));
    write(root / "user.slice/memory.current", std::to_string(100 * kMiB));
    write(root / "user.slice/job/memory.max", std::to_string(400 * kMiB) + "\n");
    write(root / "user.slice/job/memory.current", std::to_string(300 * kMiB));
    write(root / "user.slice/job/memory.stat", "anon 100\nfile 2000\ninactive_file " + std::to_string(150 * kMiB) + "\nactive_file 5\n");
    const SystemMemory m = apply_cgroup_limits(machine(), "0::/user.slice/job\n", root.string());
    EXPECT_EQ(m.limit_bytes, 400 * kMiB);
    EXPECT_EQ(m.available_bytes, 250 * kMiB) << "400 - (300 - 150 inactive page cache)";
    EXPECT_EQ(m.total_bytes, 400 * kMiB);
    EXPECT_EQ(m.limit_source, "cgroup v2 /user.slice/job (memory.max)");
}

TEST(CgroupMemory, AParentWithLessRoomWins) {
    const fs::path root = temp_dir("cgroup-v2-parent");
    write(root / "a/memory.max", std::to_string(1000 * kMiB));
    write(root / "a/memory.current", std::to_string(900 * kMiB));
    write(root / "a/b/memory.max", std::to_string(500 * kMiB));
    write(root / "a/b/memory.current", std::to_string(10 * kMiB));
    const SystemMemory m = apply_cgroup_limits(machine(), "0::/a/b\n", root.string());
    EXPECT_EQ(m.available_bytes, 100 * kMiB) << "the parent's 1000 - 900 is tighter than the child's 490";
    EXPECT_EQ(m.limit_bytes, 1000 * kMiB);
    EXPECT_EQ(m.limit_source, "cgroup v2 /a (memory.max)");
}

TEST(CgroupMemory, V1AndHybridSystemsReadTheMemoryController) {
    const fs::path root = temp_dir("cgroup-v1");
    write(root / "memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
    write(root / "memory/docker/abc/memory.limit_in_bytes", std::to_string(256 * kMiB));
    write(root / "memory/docker/abc/memory.usage_in_bytes", std::to_string(200 * kMiB));
    write(root / "memory/docker/abc/memory.stat", "cache 5\ntotal_inactive_file " + std::to_string(40 * kMiB) + "\n");
    write(root / "unified/memory.max", std::to_string(1 * kMiB));  // a v2 line must not win over v1's memory line
    const std::string cgroups = "12:pids:/docker/abc\n4:cpu,memory:/docker/abc\n0::/docker/abc\n";
    const SystemMemory m = apply_cgroup_limits(machine(), cgroups, root.string());
    EXPECT_EQ(m.limit_bytes, 256 * kMiB);
    EXPECT_EQ(m.available_bytes, 96 * kMiB) << "256 - (200 - 40)";
    EXPECT_EQ(m.limit_source, "cgroup v1 /docker/abc (memory.limit_in_bytes)");
}

TEST(CgroupMemory, ANamespacedViewReadsTheMount) {
    const fs::path root = temp_dir("cgroup-ns");
    write(root / "memory.max", std::to_string(64 * kMiB));
    write(root / "memory.current", std::to_string(70 * kMiB));  // over the limit: no room, not a wrap-around
    const SystemMemory m = apply_cgroup_limits(machine(), "0::/\n", root.string());
    EXPECT_EQ(m.limit_bytes, 64 * kMiB);
    EXPECT_EQ(m.available_bytes, 0u);
    EXPECT_EQ(m.limit_source, "cgroup v2 / (memory.max)");
    // A path the mount does not show (the process sees another namespace's path): the mount alone.
    const SystemMemory other = apply_cgroup_limits(machine(), "0::/elsewhere/x\n", root.string());
    EXPECT_EQ(other.limit_bytes, 64 * kMiB);
}

TEST(CgroupMemory, NoLimitOrNothingReadableChangesNothing) {
    const fs::path root = temp_dir("cgroup-none");
    write(root / "job/memory.max", "max\n");
    write(root / "job/memory.current", "12345\n");
    for (const std::string& cgroups : {std::string("0::/job\n"), std::string(""), std::string("garbage"),
                                       std::string("3:memory:/missing\n")}) {
        SCOPED_TRACE(cgroups);
        const SystemMemory m = apply_cgroup_limits(machine(), cgroups, root.string());
        EXPECT_EQ(m.limit_bytes, 0u);
        EXPECT_EQ(m.available_bytes, machine().available_bytes);
        EXPECT_EQ(m.total_bytes, machine().total_bytes);
        EXPECT_TRUE(m.limit_source.empty());
    }
    write(root / "bad/memory.max", "12x\n");
    EXPECT_EQ(apply_cgroup_limits(machine(), "0::/bad\n", root.string()).limit_bytes, 0u) << "not a number";
}

} // namespace
} // namespace cflow::test
