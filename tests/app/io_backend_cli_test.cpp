// --io-backend auto|uring|overlapped|threads on generate, chat, serve and bench experts: bench experts
// names the backend that ran on every line (io_backend) and the sync line's read bandwidth,
// generate --stats says it per step (ioBackend), an explicit backend this OS cannot run and bad
// values fail with one line. No timing is asserted.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cflow/engine/io/io_backend.h"
#include "cli_runner.h"
#include "json_lines.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string io_moe_model(const std::filesystem::path& dir) {
    return write_synthetic_cflow(delayed_moe_spec(), dir / "moe.cflow");
}

#if defined(_WIN32)
constexpr const char* kOsBackend = "overlapped";
constexpr const char* kOtherOsBackend = "uring";
#else
constexpr const char* kOsBackend = "uring";
constexpr const char* kOtherOsBackend = "overlapped";
#endif

TEST(IoBackendCli, BenchExpertsNamesTheBackendThatRan) {
    const std::string model = io_moe_model(temp_dir("io_backend_bench"));
    for (const char* backend : {"threads", kOsBackend, "auto"}) {
        SCOPED_TRACE(backend);
        auto r = run_cflow({"bench", "experts", model, "--threads", "1", "--tokens", "4", "--rounds", "2", "--warmup", "1",
                            "--io-backend", backend, "--json"});
        // The OS backend may be refused here (an old kernel, a seccomp filter, a build without liburing).
        if (r.exit_code != 0 && (r.err.find("io_uring_queue_init") != std::string::npos ||
                                 r.err.find("has no io_uring") != std::string::npos)) {
            std::cout << "[io backend cli] " << backend << " cannot run here: " << r.err;
            continue;
        }
        ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
        const auto lines = json_lines(r.out);
        ASSERT_EQ(lines.size(), 3u) << r.out;
        EXPECT_EQ(lines[0]["io_backend"], "none") << "the mapped arm reads through the page cache";
        const std::string ran = lines[1]["io_backend"];
        EXPECT_EQ(lines[2]["io_backend"], ran);
        if (std::string(backend) != "auto") {
            EXPECT_EQ(ran, backend);
        } else {
            EXPECT_TRUE(ran == kOsBackend || (ran == "threads" && lines[1].contains("io_backend_note"))) << lines[1];
        }
        ASSERT_TRUE(lines[1].contains("read_mb_per_second"));
        EXPECT_GT(lines[1]["read_mb_per_second"].get<double>(), 0.0);
        EXPECT_TRUE(lines[2]["outputs_identical"].get<bool>());
    }
    auto text = run_cflow({"bench", "experts", model, "--threads", "1", "--tokens", "2", "--rounds", "1", "--warmup", "0",
                           "--io-backend", "threads"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("through threads"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("MB/s"), std::string::npos) << text.out;
}

TEST(IoBackendCli, GenerateStatsSayWhichBackendReadTheExperts) {
    const auto dir = temp_dir("io_backend_generate");
    const std::string model = io_moe_model(dir);
    const auto trace = (dir / "trace.jsonl").string();
    auto r = run_cflow({"generate", model, "-p", "ab", "-n", "4", "--temp", "0", "--expert-fetch", "sync", "--io-backend",
                        "threads", "--stats", "--telemetry-file", trace});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("[cflow] experts sync: threads reads"), std::string::npos) << r.err;
    std::ifstream in(trace);
    std::string line;
    int steps = 0;
    while (std::getline(in, line)) {
        const auto j = nlohmann::json::parse(line);
        EXPECT_EQ(j["ioBackend"], "threads") << line;
        ++steps;
    }
    EXPECT_GE(steps, 4);
    // The mapped arm reads nothing itself: no ioBackend key.
    auto mapped = run_cflow({"generate", model, "-p", "ab", "-n", "2", "--temp", "0", "--stats", "--telemetry-file", trace});
    ASSERT_EQ(mapped.exit_code, 0) << mapped.err;
    std::ifstream again(trace);
    ASSERT_TRUE(std::getline(again, line));
    EXPECT_FALSE(nlohmann::json::parse(line).contains("ioBackend")) << line;
}

TEST(IoBackendCli, BadValuesAndImpossibleChoicesFailWithOneLine) {
    const std::string model = io_moe_model(temp_dir("io_backend_bad"));
    for (const char* bad : {"io_uring", "", "THREADS", "aio"}) {
        SCOPED_TRACE(bad);
        expect_one_line_failure(run_cflow({"bench", "experts", model, "--io-backend", bad}), "--io-backend");
        expect_one_line_failure(
            run_cflow({"generate", model, "-p", "a", "-n", "1", "--expert-fetch", "staged", "--io-backend", bad}), "--io-backend");
        expect_one_line_failure(run_cflow_with_input({"chat", model, "--expert-fetch", "staged", "--io-backend", bad}, "hi\n"),
                                "--io-backend");
        // Refused before the server binds a port (serve would otherwise run until Ctrl-C).
        expect_one_line_failure(run_cflow({"serve", model, "--port", "0", "--expert-fetch", "staged", "--io-backend", bad}),
                                "--io-backend");
    }
    expect_one_line_failure(run_cflow({"serve", model, "--port", "0", "--io-backend", "threads"}), "--expert-fetch");
    expect_one_line_failure(run_cflow({"serve", model, "--port", "0", "--load", "lazy"}), "--load");
    // Mapped experts are not read by any backend: an explicit one is said to be pointless.
    expect_one_line_failure(run_cflow({"generate", model, "-p", "a", "-n", "1", "--io-backend", "threads"}), "--expert-fetch");
    expect_one_line_failure(run_cflow_with_input({"chat", model, "--io-backend", "threads"}, "hi\n"), "--expert-fetch");
    // The other OS's backend cannot run here: Unsupported, naming it.
    expect_one_line_failure(
        run_cflow({"generate", model, "-p", "a", "-n", "1", "--expert-fetch", "staged", "--io-backend", kOtherOsBackend}),
        kOtherOsBackend);
    expect_one_line_failure(run_cflow({"bench", "experts", model, "--io-backend", kOtherOsBackend}), kOtherOsBackend);
}

} // namespace
} // namespace cflow::test
