// The CLI's contract: exit 0 on success; non-zero with exactly one error line on stderr otherwise.
#include <fstream>
#include <nlohmann/json.hpp>

#include "cflow/formats/converter.h"
#include "cli_runner.h"
#include "synthetic_model.h"
#include "test_support.h"

namespace cflow::test {
namespace {

std::string write_file(const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
}

std::string synthetic_cflow(const std::filesystem::path& dir) {
    SyntheticSpec spec;
    auto source = make_synthetic_model(spec);
    const std::string out = (dir / "tiny.cflow").string();
    ConvertOptions options;
    options.weight_quant = DType::F32;
    auto r = convert_to_cflow(source, out, options);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error());
    return out;
}

TEST(Cli, UnknownCommandFails) {
    auto r = run_cflow({"frobnicate"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("unknown command"), std::string::npos);
}

TEST(Cli, VersionIsTheProjectVersion) {
    auto r = run_cflow({"--version"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, std::string("cflow ") + CFLOW_PROJECT_VERSION + "\n");
    EXPECT_TRUE(r.err.empty()) << r.err;
    auto extra = run_cflow({"--version", "extra"});
    EXPECT_EQ(extra.exit_code, 2);
    EXPECT_TRUE(extra.out.empty()) << extra.out;
    EXPECT_NE(extra.err.find("--version takes no arguments"), std::string::npos) << extra.err;
}

TEST(Cli, GenerateMissingFileFails) {
    expect_one_line_failure(run_cflow({"generate", "/nonexistent/model.cflow", "-p", "hi", "-n", "3"}),
                            "/nonexistent/model.cflow");
}

TEST(Cli, GenerateCorruptFileFailsWithReaderMessage) {
    const auto dir = temp_dir("files");
    const auto path = write_file(dir / "garbage.cflow", std::string(200, 'x'));
    expect_one_line_failure(run_cflow({"generate", path, "-p", "hi"}), "garbage.cflow");
}

TEST(Cli, InspectCorruptFileFails) {
    const auto dir = temp_dir("files");
    const auto path = write_file(dir / "short.cflow", "CFLOW");
    expect_one_line_failure(run_cflow({"inspect", path}), "short.cflow");
}

TEST(Cli, BadOptionValuesAreNamed) {
    const auto dir = temp_dir("files");
    const auto model = synthetic_cflow(dir);
    expect_one_line_failure(run_cflow({"generate", model, "-n", "many"}), "-n");
    expect_one_line_failure(run_cflow({"generate", model, "--top-p", "2"}), "--top-p");
    expect_one_line_failure(run_cflow({"generate", model, "--bogus"}), "--bogus");
    expect_one_line_failure(run_cflow({"generate", model, "--load", "maybe"}), "--load");
}

TEST(Cli, ConvertRejectsUnknownQuantAndMissingSource) {
    const auto dir = temp_dir("files");
    expect_one_line_failure(run_cflow({"convert", "/nonexistent/dir", "-o", (dir / "x.cflow").string()}),
                            "/nonexistent/dir");
    expect_one_line_failure(run_cflow({"convert", dir.string(), "-o", (dir / "x.cflow").string(), "--quant", "q3"}),
                            "--quant");
    EXPECT_FALSE(std::filesystem::exists(dir / "x.cflow"));
}

TEST(Cli, InspectJsonDescribesGeometryAndSegments) {
    const auto dir = temp_dir("files");
    const auto model = synthetic_cflow(dir);
    auto r = run_cflow({"inspect", model, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    const SyntheticSpec spec;
    EXPECT_EQ(j["version"], kCflowVersion);
    EXPECT_EQ(j["geometry"]["d_model"], spec.d_model);
    EXPECT_EQ(j["geometry"]["n_layers"], spec.n_layers);
    EXPECT_EQ(j["layers"].size(), spec.n_layers);
    EXPECT_EQ(j["schedule"]["combine_style"], "Sequential");
    EXPECT_TRUE(j["metadata"].contains("tokenizer.ggml.tokens"));
    r = run_cflow({"inspect", model});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("d_model"), std::string::npos);
}

TEST(Cli, GenerateSyntheticModelStreamsPromptThenText) {
    const auto dir = temp_dir("files");
    const auto model = synthetic_cflow(dir);
    auto a = run_cflow({"generate", model, "-p", "hello", "-n", "12", "--temp", "0.9", "--seed", "7"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(a.out.rfind("hello", 0), 0u);
    EXPECT_NE(a.err.find("generated"), std::string::npos);
    auto b = run_cflow({"generate", model, "-p", "hello", "-n", "12", "--temp", "0.9", "--seed", "7"});
    EXPECT_EQ(a.out, b.out) << "a fixed seed must reproduce the same text";
}

} // namespace
} // namespace cflow::test
