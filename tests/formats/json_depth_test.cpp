// JSON nested deeper than any real file is refused before nlohmann builds it (its recursive
// copy and destruction overflowed the stack at ~60k-200k levels).
#include <gtest/gtest.h>

#include <string>

#include "cflow/formats/json_depth.h"

namespace cflow {
namespace {

TEST(JsonDepth, CountsArraysAndObjectsOutsideStrings) {
    EXPECT_EQ(json_nesting_depth("1"), 0u);
    EXPECT_EQ(json_nesting_depth("[]"), 1u);
    EXPECT_EQ(json_nesting_depth(R"({"a": [1, {"b": [2]}], "c": {}})"), 4u);
    EXPECT_EQ(json_nesting_depth(R"(["[[[[", "\"[[[", "{{{"])"), 1u) << "brackets inside strings, escaped quotes";
    EXPECT_EQ(json_nesting_depth(R"(["a\\", [[1]]])"), 3u) << "an escaped backslash ends before the quote";
    EXPECT_EQ(json_nesting_depth("]]]][[]"), 2u) << "stray closers never go below zero";
}

TEST(JsonDepth, DeepTextIsRefusedWithWhatAndTheLimit) {
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    const Status s = check_json_depth(deep, "tokenizer.json");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(s.error().find("tokenizer.json: JSON nested 200000 levels deep; at most 256"), std::string::npos) << s.error();
    EXPECT_TRUE(check_json_depth(std::string(256, '[') + std::string(256, ']'), "x").ok());
}

} // namespace
} // namespace cflow
