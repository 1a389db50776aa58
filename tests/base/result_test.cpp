// Errors carry a kind that callers branch on; the kind survives every hand-over between
// Result and Status.
#include <gtest/gtest.h>

#include "cflow/base/cancel.h"
#include "cflow/base/result.h"

namespace cflow {
namespace {

Result<int> fails(ErrorKind kind) { return make_error(kind, "what went wrong"); }

Status forwards(ErrorKind kind) {
    auto r = fails(kind);
    if (!r) return r.take_error();
    return {};
}

TEST(Result, KindTravelsThroughResultAndStatus) {
    for (ErrorKind kind : {ErrorKind::InvalidInput, ErrorKind::Unsupported, ErrorKind::Io, ErrorKind::OutOfMemory,
                           ErrorKind::Cancelled, ErrorKind::ContextFull, ErrorKind::OverBudget, ErrorKind::Internal}) {
        const Status s = forwards(kind);
        ASSERT_FALSE(s.ok());
        EXPECT_EQ(s.kind(), kind) << error_kind_name(kind);
        EXPECT_EQ(s.error(), "what went wrong");
        const Result<std::string> again = s.take_error();
        EXPECT_EQ(again.kind(), kind);
    }
}

TEST(Result, DefaultsAndNames) {
    EXPECT_EQ(Result<int>(make_error("x")).kind(), ErrorKind::InvalidInput);
    EXPECT_EQ(cancelled_error("conversion").kind, ErrorKind::Cancelled);
    EXPECT_EQ(cancelled_error("conversion").message, "conversion: cancelled");
    EXPECT_EQ(out_of_memory_error("step").kind, ErrorKind::OutOfMemory);
    EXPECT_EQ(error_kind_name(ErrorKind::ContextFull), "context_full");
    EXPECT_TRUE(Status::success().ok());
    EXPECT_EQ(*Result<int>(7), 7);
}

TEST(CancelToken, CancelAndReset) {
    CancelToken token;
    EXPECT_FALSE(token.is_cancelled());
    token.cancel();
    EXPECT_TRUE(token.is_cancelled());
    token.reset();
    EXPECT_FALSE(token.is_cancelled());
}

} // namespace
} // namespace cflow
