// The stop-string rule: nothing of a stop string is ever released, text that cannot become one
// is released at once, the earliest match wins, and a reply without a match loses nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cflow/engine/generation/stop_sequences.h"

namespace cflow {
namespace {

std::string feed_all(StopSequenceMatcher& matcher, const std::vector<std::string>& pieces,
                     std::vector<std::string>* released = nullptr) {
    std::string shown;
    for (const std::string& piece : pieces) {
        std::string out = matcher.feed(piece);
        if (released) released->push_back(out);
        shown += out;
    }
    return shown + matcher.flush();
}

TEST(StopSequences, AStopSplitAcrossPiecesIsNeverShown) {
    StopSequenceMatcher matcher({"\nUser:"});
    std::vector<std::string> released;
    const std::string shown = feed_all(matcher, {"Hello", " there\n", "Us", "er:", " more"}, &released);
    EXPECT_TRUE(matcher.matched());
    EXPECT_EQ(matcher.matched_sequence(), "\nUser:");
    EXPECT_EQ(shown, "Hello there");
    ASSERT_EQ(released.size(), 5u);
    EXPECT_EQ(released[0], "Hello") << "text that cannot start the stop string is released at once";
    EXPECT_EQ(released[1], " there") << "the newline could begin the stop string: held";
    EXPECT_EQ(released[2], "");
    EXPECT_EQ(released[4], "") << "nothing after a match";
}

TEST(StopSequences, AHeldPrefixThatDoesNotCompleteIsReleased) {
    StopSequenceMatcher matcher({"END"});
    std::vector<std::string> released;
    const std::string shown = feed_all(matcher, {"the EN", "D", "ING"}, &released);
    EXPECT_EQ(shown, "the ") << "END matched inside ENDING";
    StopSequenceMatcher other({"END"});
    EXPECT_EQ(feed_all(other, {"the EN", "TRY and E"}), "the ENTRY and E") << "flush returns the held tail";
    EXPECT_FALSE(other.matched());
}

TEST(StopSequences, TheEarliestMatchWinsAndTheLongestAtATie) {
    StopSequenceMatcher matcher({"bc", "abcd", "ab"});
    EXPECT_EQ(feed_all(matcher, {"xxabcdyy"}), "xx");
    EXPECT_EQ(matcher.matched_sequence(), "abcd");
    StopSequenceMatcher later({"zz", "b"});
    EXPECT_EQ(feed_all(later, {"abzz"}), "a");
    EXPECT_EQ(later.matched_sequence(), "b");
}

TEST(StopSequences, EmptyStringsAreIgnoredAndUtf8StaysWhole) {
    StopSequenceMatcher none({"", ""});
    EXPECT_TRUE(none.empty());
    EXPECT_EQ(feed_all(none, {"a", "b"}), "ab");
    StopSequenceMatcher matcher({"\xC3\xA9t\xC3\xA9"});  // "été"
    std::vector<std::string> released;
    EXPECT_EQ(feed_all(matcher, {"caf\xC3\xA9", " \xC3\xA9t", "\xC3\xA9!"}, &released), "caf\xC3\xA9 ");
    EXPECT_EQ(released[0], "caf") << "the é could begin the stop string";
    EXPECT_EQ(released[1], "\xC3\xA9 ") << "held text starts at a character boundary";
}

} // namespace
} // namespace cflow
