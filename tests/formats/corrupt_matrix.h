#pragma once
// The harness of the *_corrupt_matrix_test.cpp tables (issue 16). A corrupt source goes through
// the path-level conversion `cflow convert` runs (open_source_model, then plan_conversion, then
// convert_to_cflow) with its output in a fresh empty folder. Each case says where the damage
// must be caught, the error kind, and a substring no other case of its table expects; and the
// output folder must still be empty afterwards: a refused source writes nothing, not even a
// temporary file.
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cflow/formats/conversion_plan.h"
#include "cflow/formats/converter.h"
#include "cflow/formats/source_model.h"
#include "test_support.h"

namespace cflow::test {

// Where a corruption must be caught: by the reader (open_source_model) or, for a file that parses
// but cannot be a model (a required tensor missing, a shape that disagrees with the config), by the
// converter's validation before it creates the output.
enum class Stage { Open, Plan };

struct Expectation {
    std::string expected;                      // substring of the error, distinct within the table
    ErrorKind kind = ErrorKind::InvalidInput;  // damage; Unsupported for a newer version or feature; Io for unreadable
    Stage stage = Stage::Open;
};

struct ConvertOutcome {
    bool converted = false;        // the whole conversion succeeded (a corrupt case never should)
    Stage failed_at = Stage::Open;
    std::string error;
    ErrorKind kind = ErrorKind::Internal;
    std::vector<std::string> left_in_output;  // names found in the output folder afterwards
};

// Runs the CLI's conversion steps on `source` with the output in `out_dir` (which must exist, empty).
inline ConvertOutcome convert_into(const std::string& source, const std::string& tokenizer,
                                   const std::filesystem::path& out_dir) {
    ConvertOutcome o;
    const ConvertOptions options{.weight_quant = DType::F32, .threads = 1};
    const std::string out = (out_dir / "out.cflow").string();
    auto model = open_source_model(source, tokenizer);
    if (!model) {
        o.error = model.error();
        o.kind = model.kind();
    } else if (auto plan = plan_conversion(*model, options); !plan) {
        o.failed_at = Stage::Plan;
        o.error = plan.error();
        o.kind = plan.kind();
    } else if (auto report = convert_to_cflow(*model, out, options); !report) {
        o.failed_at = Stage::Plan;  // the converter refused what the plan accepted: reported as a Plan failure
        o.error = report.error();
        o.kind = report.kind();
    } else {
        o.converted = true;
    }
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(out_dir, ec)) o.left_in_output.push_back(e.path().filename().string());
    return o;
}

// Checks one case's outcome; `file_name` is the corrupt file (or folder) the message must name.
inline void expect_refused(const ConvertOutcome& o, const Expectation& e, const std::string& file_name) {
    ASSERT_FALSE(o.converted) << "the corrupt source was converted";
    EXPECT_EQ(o.failed_at, e.stage) << (o.failed_at == Stage::Open ? "refused by the reader" : "refused by the converter")
                                    << ": " << o.error;
    EXPECT_EQ(o.kind, e.kind) << o.error;
    EXPECT_NE(o.error.find(file_name), std::string::npos) << "the message does not name " << file_name << ": " << o.error;
    EXPECT_NE(o.error.find(e.expected), std::string::npos) << "expected '" << e.expected << "' in: " << o.error;
    EXPECT_EQ(o.error.find('\n'), std::string::npos) << "a one-line message: " << o.error;
    EXPECT_TRUE(o.left_in_output.empty()) << "the output folder holds " << o.left_in_output.size() << " entries, e.g. "
                                          << (o.left_in_output.empty() ? "" : o.left_in_output.front());
}

// Every case of a table expects its own message: two cases hitting one check prove nothing new.
template <class Case>
void expect_distinct_expectations(const std::vector<Case>& cases) {
    std::set<std::string> seen;
    for (const Case& c : cases) EXPECT_TRUE(seen.insert(c.want.expected).second) << "duplicate expectation: " << c.name;
}

} // namespace cflow::test
