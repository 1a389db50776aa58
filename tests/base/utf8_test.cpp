// The one UTF-8 rule set (base/utf8.h) against Unicode's well-formedness table (3-7) and the
// cases each former copy handled: overlongs, surrogates, > U+10FFFF, truncation, streaming prefixes.
#include <gtest/gtest.h>

#include <string>

#include "cflow/base/utf8.h"

namespace cflow {
namespace {

TEST(Utf8, AppendEncodesEachLengthAndReplacesOutOfRange) {
    std::string out;
    append_utf8(out, 0x41);
    append_utf8(out, 0xE9);
    append_utf8(out, 0x20AC);
    append_utf8(out, 0x1F600);
    EXPECT_EQ(out, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    std::string bad;
    append_utf8(bad, 0x110000);
    EXPECT_EQ(bad, std::string(kUtf8Replacement));
}

TEST(Utf8, DecodeAcceptsWellFormedAndRejectsIllFormed) {
    uint32_t cp = 0;
    EXPECT_EQ(decode_utf8_at("\xE2\x82\xAC", 0, cp), 3u);
    EXPECT_EQ(cp, 0x20ACu);
    EXPECT_EQ(decode_utf8_at("\xF4\x8F\xBF\xBF", 0, cp), 4u);
    EXPECT_EQ(cp, 0x10FFFFu);
    EXPECT_EQ(decode_utf8_at("\xC0\xAF", 0, cp), 0u) << "overlong 2-byte";
    EXPECT_EQ(decode_utf8_at("\xE0\x80\xAF", 0, cp), 0u) << "overlong 3-byte";
    EXPECT_EQ(decode_utf8_at("\xED\xA0\x80", 0, cp), 0u) << "surrogate";
    EXPECT_EQ(decode_utf8_at("\xF4\x90\x80\x80", 0, cp), 0u) << "past U+10FFFF";
    EXPECT_EQ(decode_utf8_at("\xE2\x82", 0, cp), 0u) << "truncated";
    EXPECT_EQ(decode_utf8_at("\x80", 0, cp), 0u) << "lone continuation";
}

TEST(Utf8, ValidityCharLengthAndSanitize) {
    EXPECT_TRUE(is_valid_utf8("h\xC3\xA9llo \xF0\x9F\x98\x80"));
    EXPECT_FALSE(is_valid_utf8("a\xC3"));
    EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));
    EXPECT_EQ(utf8_char_length("\xC3\xA9x", 0), 2u);
    EXPECT_EQ(utf8_char_length("\xC0\xAFx", 0), 1u) << "an overlong is not one character";
    EXPECT_EQ(sanitize_utf8("a\xFF" "b"), "a" + std::string(kUtf8Replacement) + "b");
    EXPECT_EQ(sanitize_utf8("ok \xE2\x82\xAC"), "ok \xE2\x82\xAC");
    const std::vector<uint32_t> cpts = utf8_to_cpts("a\xE2\x82\xAC\xFF");
    EXPECT_EQ(cpts, (std::vector<uint32_t>{'a', 0x20AC, 0xFFFD}));
}

TEST(Utf8, IncompletePrefixOnlyForBytesThatCouldStillComplete) {
    EXPECT_TRUE(is_incomplete_utf8_prefix("\xE2\x82", 0));
    EXPECT_TRUE(is_incomplete_utf8_prefix("\xF0\x9F\x98", 0));
    EXPECT_FALSE(is_incomplete_utf8_prefix("\xE2\x82\xAC", 0)) << "complete";
    EXPECT_FALSE(is_incomplete_utf8_prefix("\xED\xA0", 0)) << "would be a surrogate";
    EXPECT_FALSE(is_incomplete_utf8_prefix("\xE0\x80", 0)) << "would be overlong";
    EXPECT_FALSE(is_incomplete_utf8_prefix("a", 0));
}

TEST(Utf8, LeadLengthFollowsLlamaCppRule) {
    EXPECT_EQ(utf8_lead_length(0x41), 1u);
    EXPECT_EQ(utf8_lead_length(0x80), 1u);
    EXPECT_EQ(utf8_lead_length(0xC3), 2u);
    EXPECT_EQ(utf8_lead_length(0xE2), 3u);
    EXPECT_EQ(utf8_lead_length(0xF0), 4u);
}

} // namespace
} // namespace cflow
