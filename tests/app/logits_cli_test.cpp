// `cflow logits`: on a shipped trained model and the f32 reference path, the next-token logits
// after the trace's prompt equal the float64 reference trace (tests/parity/trained/*.json, made
// by tests/reference/cflow_reference.py) within the parity tests' tolerance; --out holds exactly
// the vector (vocab_size little-endian float32 values) that --json summarises; bad input fails
// with one line.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace cflow::test {
namespace {

namespace fs = std::filesystem;

// As kLogitRelTolerance of the trained parity test: the f32 engine against the float64 trace.
constexpr double kLogitRelTolerance = 2e-5;

const fs::path kSource = CFLOW_SOURCE_DIR;

nlohmann::json read_json(const fs::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

std::vector<float> read_f32_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::vector<float> values(bytes.size() / sizeof(float));
    std::copy(bytes.begin(), bytes.begin() + std::ptrdiff_t(values.size() * sizeof(float)),
              reinterpret_cast<char*>(values.data()));
    return values;
}

class LogitsCli : public ::testing::Test {
protected:
    void SetUp() override {
        tmp_ = fs::temp_directory_path() / ("cflow-logits-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(tmp_);
    }
    void TearDown() override { fs::remove_all(tmp_); }
    fs::path tmp_;
};

TEST_F(LogitsCli, MatchesTheFloat64TraceOnTheReferencePath) {
    const auto trace = read_json(kSource / "tests/parity/trained/arch2_4_sync.q4_0.json");
    const std::string model = (kSource / trace["model_file"].get<std::string>()).string();
    const auto prompt_ids = trace["prompt_ids"].get<std::vector<int32_t>>();
    const auto& want = trace["teacher_forced"]["positions"][prompt_ids.size() - 1];
    const fs::path out = tmp_ / "logits.f32";

    auto r = run_cflow({"logits", model, "-p", trace["prompt"].get<std::string>(), "--isa", "scalar", "--top", "5",
                        "--json", "--out", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto got = nlohmann::json::parse(r.out);
    EXPECT_EQ(got["prompt_tokens"].get<std::vector<int32_t>>(), prompt_ids) << "tokenised as tokenize --add-special";
    EXPECT_EQ(got["isa"], "scalar");
    EXPECT_EQ(got["vocab_size"].get<size_t>(), trace["vocab_size"].get<size_t>());
    ASSERT_EQ(got["top"].size(), 5u);
    double prob_sum = 0;
    for (size_t i = 0; i < 5; ++i) {
        const int32_t want_id = want["top5"][i][0];
        const double want_logit = want["top5"][i][1];
        EXPECT_EQ(got["top"][i]["id"].get<int32_t>(), want_id) << "rank " << i;
        EXPECT_LT(std::abs(got["top"][i]["logit"].get<double>() - want_logit) / std::abs(want_logit), kLogitRelTolerance)
            << "rank " << i;
        prob_sum += got["top"][i]["probability"].get<double>();
    }
    EXPECT_GT(prob_sum, 0.0);
    EXPECT_LE(prob_sum, 1.0 + 1e-9);

    // The raw file: exactly vocab_size floats, the same numbers, and ||logits|| as the trace's.
    ASSERT_EQ(fs::file_size(out), trace["vocab_size"].get<size_t>() * sizeof(float));
    const auto vector = read_f32_file(out);
    double l2 = 0;
    for (float v : vector) l2 += double(v) * v;
    EXPECT_LT(std::abs(std::sqrt(l2) - want["logits_l2"].get<double>()) / want["logits_l2"].get<double>(),
              kLogitRelTolerance);
    for (size_t i = 0; i < 5; ++i) {
        const int32_t id = got["top"][i]["id"];
        EXPECT_EQ(vector[size_t(id)], got["top"][i]["logit"].get<float>()) << "id " << id;
    }
    EXPECT_EQ(std::max_element(vector.begin(), vector.end()) - vector.begin(), got["top"][0]["id"].get<int32_t>());
}

TEST_F(LogitsCli, IdsGiveTheSameLogitsAsTheTextTheyTokeniseFrom) {
    const std::string model = (kSource / "resources/models/arch2_4_sync.q4_0.cflow").string();
    const fs::path from_text = tmp_ / "text.f32", from_ids = tmp_ / "ids.f32";
    auto a = run_cflow({"logits", model, "-p", "Once upon a time", "--isa", "scalar", "--out", from_text.string()});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    auto b = run_cflow({"logits", model, "--ids", "0 814 912 260 655", "--isa", "scalar", "--out", from_ids.string()});
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(read_f32_file(from_text), read_f32_file(from_ids));
}

TEST_F(LogitsCli, TextOutputListsTheTopIdsAndTheDefaultPathAgreesOnTop1) {
    const auto trace = read_json(kSource / "tests/parity/trained/arch2_4_sync.q4_0.json");
    const std::string model = (kSource / trace["model_file"].get<std::string>()).string();
    const auto prompt_ids = trace["prompt_ids"].get<std::vector<int32_t>>();
    const int32_t want_top1 = trace["teacher_forced"]["positions"][prompt_ids.size() - 1]["top5"][0][0];

    auto r = run_cflow({"logits", model, "-p", trace["prompt"].get<std::string>(), "--top", "3"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines;
    for (size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1) lines.push_back(r.out.substr(at, nl - at));
    ASSERT_EQ(lines.size(), 4u) << r.out;
    EXPECT_NE(lines[0].find("prompt: 5 tokens"), std::string::npos) << lines[0];
    EXPECT_EQ(std::stoi(lines[1]), want_top1) << "the int8 default path's top 1 (its margin here is > 3 logits)";
}

TEST_F(LogitsCli, BadInputFailsWithOneLine) {
    const std::string model = (kSource / "resources/models/arch2_4_sync.q4_0.cflow").string();
    expect_one_line_failure(run_cflow({"logits", model, "-p", "x", "--isa", "sse9"}), "--isa must be one of");
    expect_one_line_failure(run_cflow({"logits", model, "-p", "x", "--top", "-1"}), "--top");
    expect_one_line_failure(run_cflow({"logits", model, "--ids", "0 99999"}), "token id 99999 is out of range");
    expect_one_line_failure(run_cflow({"logits", model, "--ids", "0 x1"}), "is not a token id");
    expect_one_line_failure(run_cflow({"logits", model, "--ids", "0", "-p", "x"}), "exclude each other");
    expect_one_line_failure(run_cflow({"logits", (tmp_ / "missing.cflow").string(), "-p", "x"}), "missing.cflow");
    expect_one_line_failure(run_cflow({"logits", model, "-p", "x", "--prompt-file", (tmp_ / "p.txt").string()}),
                            "exclude each other");
    // The output's folder does not exist: the error names the path and nothing is left behind.
    const fs::path out = tmp_ / "no-such-dir" / "l.f32";
    expect_one_line_failure(run_cflow({"logits", model, "-p", "x", "--out", out.string()}), "no-such-dir");
    EXPECT_FALSE(fs::exists(out.parent_path()));
}

} // namespace
} // namespace cflow::test
