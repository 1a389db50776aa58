// Metadata: typed getters, serialize/parse round trip of every kind, and parse errors
// (truncation at every byte, absurd counts, unknown kinds) that never crash.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "cflow/formats/metadata.h"

namespace cflow {
namespace {

Metadata every_kind() {
    Metadata m;
    m.set("general.name", std::string("tiny \xE2\x96\x81model"));
    m.set("general.file_type", int64_t{-7});
    m.set("llama.rope.freq_base", 10000.5);
    m.set("tokenizer.ggml.add_bos_token", true);
    m.set("tokenizer.ggml.tokens", std::vector<std::string>{"<unk>", "", "hello"});
    m.set("tokenizer.ggml.scores", std::vector<float>{0.0f, -1.5f, std::numeric_limits<float>::lowest()});
    m.set("tokenizer.ggml.token_type", std::vector<int32_t>{2, 3, 1, std::numeric_limits<int32_t>::min()});
    m.set("", std::string("empty key"));
    m.set("empty.list", std::vector<std::string>{});
    return m;
}

TEST(Metadata, GettersAndConversions) {
    Metadata m = every_kind();
    EXPECT_EQ(m.get_string("general.name").value(), "tiny \xE2\x96\x81model");
    EXPECT_EQ(m.get_int("general.file_type").value(), -7);
    EXPECT_EQ(m.get_int("tokenizer.ggml.add_bos_token").value(), 1);  // Bool reads as Int
    EXPECT_EQ(m.get_float("general.file_type").value(), -7.0);       // Int reads as Float
    EXPECT_EQ(m.get_float("llama.rope.freq_base").value(), 10000.5);
    EXPECT_TRUE(m.get_bool("tokenizer.ggml.add_bos_token").value());
    EXPECT_TRUE(m.get_bool("general.file_type").value());            // Int reads as Bool
    EXPECT_FALSE(m.get_string("general.file_type").has_value());     // no cross-kind string conversion
    EXPECT_FALSE(m.get_int("llama.rope.freq_base").has_value());     // no float -> int truncation
    EXPECT_EQ(m.get_strings("tokenizer.ggml.tokens")->size(), 3u);
    EXPECT_EQ(m.get_floats("tokenizer.ggml.scores")->at(1), -1.5f);
    EXPECT_EQ(m.get_ints("tokenizer.ggml.token_type")->at(0), 2);
    EXPECT_EQ(m.get_strings("general.name"), nullptr);
    EXPECT_EQ(m.find("missing"), nullptr);
    m.erase("general.name");
    EXPECT_FALSE(m.contains("general.name"));
}

TEST(Metadata, RoundTripOfEveryKind) {
    const Metadata m = every_kind();
    const std::vector<uint8_t> bytes = m.serialize();
    auto parsed = Metadata::parse(bytes.data(), bytes.size(), "test.cflow", 1000);
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_EQ(parsed->entries(), m.entries());
    EXPECT_EQ(parsed->serialize(), bytes);
}

TEST(Metadata, EmptySectionRoundTrips) {
    const std::vector<uint8_t> bytes = Metadata().serialize();
    ASSERT_EQ(bytes.size(), 8u);
    auto parsed = Metadata::parse(bytes.data(), bytes.size(), "x", 0);
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_TRUE(parsed->entries().empty());
}

TEST(Metadata, TruncationAtEveryByteIsAnError) {
    const std::vector<uint8_t> bytes = every_kind().serialize();
    for (size_t n = 0; n < bytes.size(); ++n) {
        // A fresh heap copy of exactly n bytes, so a read past the end is visible to sanitizers.
        std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
        auto parsed = Metadata::parse(cut.empty() ? nullptr : cut.data(), n, "model.cflow", 4096);
        ASSERT_FALSE(parsed.ok()) << "truncated at " << n << " bytes parsed";
        EXPECT_EQ(parsed.kind(), ErrorKind::InvalidInput) << parsed.error();
        EXPECT_EQ(parsed.error().rfind("model.cflow: ", 0), 0u) << parsed.error();
        EXPECT_NE(parsed.error().find("offset"), std::string::npos) << parsed.error();
    }
}

// Patches the bytes right after the first occurrence of `key` (its kind byte and value).
size_t value_offset(const std::vector<uint8_t>& bytes, const std::string& key) {
    for (size_t i = 0; i + key.size() <= bytes.size(); ++i)
        if (std::memcmp(bytes.data() + i, key.data(), key.size()) == 0) return i + key.size() + 1;
    ADD_FAILURE() << "key not found";
    return 0;
}

TEST(Metadata, StringLengthPastEndNamesEntryKeyAndAbsoluteOffset) {
    Metadata m;
    m.set("a", int64_t{1});
    m.set("b.name", std::string("hello"));
    std::vector<uint8_t> bytes = m.serialize();
    const size_t at = value_offset(bytes, "b.name");
    const uint64_t huge = 99999;
    std::memcpy(bytes.data() + at, &huge, 8);
    auto parsed = Metadata::parse(bytes.data(), bytes.size(), "model.cflow", 1000);
    ASSERT_FALSE(parsed.ok());
    const std::string expected =
        "model.cflow: metadata entry 1 (key 'b.name') at offset " + std::to_string(1000 + at) + ": string length 99999 past end";
    EXPECT_EQ(parsed.error().rfind(expected, 0), 0u) << parsed.error();
}

TEST(Metadata, HugeCountsAreRejectedBeforeAllocating) {
    {
        std::vector<uint8_t> bytes = every_kind().serialize();
        const uint32_t count = 0xFFFFFFFFu;
        std::memcpy(bytes.data() + 4, &count, 4);
        auto parsed = Metadata::parse(bytes.data(), bytes.size(), "m", 0);
        ASSERT_FALSE(parsed.ok());
        EXPECT_EQ(parsed.kind(), ErrorKind::InvalidInput) << parsed.error();  // refused, not an attempted allocation
        EXPECT_NE(parsed.error().find("entry count 4294967295"), std::string::npos) << parsed.error();
    }
    for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
        std::vector<uint8_t> bytes = every_kind().serialize();
        const uint64_t count = 1ull << 61;  // would be 2^63+ bytes
        std::memcpy(bytes.data() + value_offset(bytes, key), &count, 8);
        auto parsed = Metadata::parse(bytes.data(), bytes.size(), "m", 0);
        ASSERT_FALSE(parsed.ok()) << key;
        EXPECT_EQ(parsed.kind(), ErrorKind::InvalidInput) << parsed.error();
        EXPECT_NE(parsed.error().find("count 2305843009213693952 cannot fit"), std::string::npos) << parsed.error();
        EXPECT_NE(parsed.error().find(key), std::string::npos) << parsed.error();
    }
}

TEST(Metadata, RejectsUnknownKindBadMagicBadBoolDuplicatesAndTrailingBytes) {
    {
        std::vector<uint8_t> bytes = every_kind().serialize();
        bytes[value_offset(bytes, "general.file_type") - 1] = 7;
        auto parsed = Metadata::parse(bytes.data(), bytes.size(), "m", 0);
        ASSERT_FALSE(parsed.ok());
        EXPECT_NE(parsed.error().find("unknown value kind 7"), std::string::npos) << parsed.error();
    }
    {
        std::vector<uint8_t> bytes = every_kind().serialize();
        bytes[0] = 'X';
        auto parsed = Metadata::parse(bytes.data(), bytes.size(), "m", 0);
        ASSERT_FALSE(parsed.ok());
        EXPECT_NE(parsed.error().find("bad magic"), std::string::npos) << parsed.error();
    }
    {
        std::vector<uint8_t> bytes = every_kind().serialize();
        bytes[value_offset(bytes, "tokenizer.ggml.add_bos_token")] = 2;
        auto parsed = Metadata::parse(bytes.data(), bytes.size(), "m", 0);
        ASSERT_FALSE(parsed.ok());
        EXPECT_NE(parsed.error().find("bool value 2"), std::string::npos) << parsed.error();
    }
    {
        Metadata m;
        m.set("k", int64_t{1});
        std::vector<uint8_t> one = m.serialize();
        std::vector<uint8_t> two = one;
        two.insert(two.end(), one.begin() + 8, one.end());  // the same entry twice
        two[4] = 2;
        auto parsed = Metadata::parse(two.data(), two.size(), "m", 0);
        ASSERT_FALSE(parsed.ok());
        EXPECT_NE(parsed.error().find("duplicate key"), std::string::npos) << parsed.error();
        one.push_back(0);
        auto trailing = Metadata::parse(one.data(), one.size(), "m", 0);
        ASSERT_FALSE(trailing.ok());
        EXPECT_NE(trailing.error().find("1 trailing bytes"), std::string::npos) << trailing.error();
    }
}

} // namespace
} // namespace cflow
