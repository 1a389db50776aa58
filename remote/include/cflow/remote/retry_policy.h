#pragma once
// When to try a request again: a 429 (rate limited) or 503 (busy, loading) before any token came.
// The server's Retry-After (seconds or an HTTP-date) is honoured up to max_wait_ms; without it the
// wait doubles from base_delay_ms up to max_delay_ms. Nothing is retried after the first streamed
// token (the reply would start over) and at most max_attempts requests are made.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cflow::remote {

struct RetryPolicy {
    uint32_t max_attempts = 4;         // requests in all, the first included
    uint32_t base_delay_ms = 500;      // the first wait without Retry-After
    uint32_t max_delay_ms = 8'000;     // the longest wait without Retry-After
    uint32_t max_wait_ms = 60'000;     // the longest Retry-After honoured; longer gives up
};

// Seconds ("120") or an HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT") as milliseconds from `now`
// (0 for a date in the past); nullopt when the text is neither.
std::optional<uint64_t> parse_retry_after_ms(std::string_view value, std::chrono::system_clock::time_point now);

// Seconds since the epoch of an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT").
std::optional<int64_t> parse_http_date(std::string_view text);

struct RetryDecision {
    bool retry = false;
    uint64_t wait_ms = 0;
    std::string why_not;  // when !retry for a retryable status: "the server asks to wait 120 s, more than 60 s"
};

// attempt: 1 for the first request. retry_after: the header's value, empty when absent.
RetryDecision decide_retry(const RetryPolicy& policy, uint32_t attempt, int status, std::string_view retry_after,
                           bool any_token_received, std::chrono::system_clock::time_point now);

} // namespace cflow::remote
