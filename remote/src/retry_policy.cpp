#include "cflow/remote/retry_policy.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

namespace cflow::remote {
namespace {

// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil): no
// timegm(), which Windows lacks.
int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = unsigned(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + int64_t(doe) - 719468;
}

bool read_int(std::string_view text, int& out) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size();
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

} // namespace

std::optional<int64_t> parse_http_date(std::string_view text) {
    // "Sun, 06 Nov 1994 08:49:37 GMT": fixed positions after the weekday's comma.
    text = trim(text);
    const size_t comma = text.find(", ");
    if (comma == std::string_view::npos) return std::nullopt;
    std::string_view rest = text.substr(comma + 2);
    if (rest.size() != 24 || rest.substr(20) != " GMT" || rest[2] != ' ' || rest[6] != ' ' || rest[11] != ' ' ||
        rest[14] != ':' || rest[17] != ':')
        return std::nullopt;
    static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    unsigned month = 0;
    for (unsigned i = 0; i < 12; ++i)
        if (rest.substr(3, 3) == kMonths[i]) month = i + 1;
    int day = 0, year = 0, hour = 0, minute = 0, second = 0;
    if (month == 0 || !read_int(rest.substr(0, 2), day) || !read_int(rest.substr(7, 4), year) ||
        !read_int(rest.substr(12, 2), hour) || !read_int(rest.substr(15, 2), minute) || !read_int(rest.substr(18, 2), second))
        return std::nullopt;
    if (day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return std::nullopt;
    return days_from_civil(year, month, unsigned(day)) * 86400 + hour * 3600 + minute * 60 + second;
}

std::optional<uint64_t> parse_retry_after_ms(std::string_view value, std::chrono::system_clock::time_point now) {
    value = trim(value);
    if (value.empty()) return std::nullopt;
    uint64_t seconds = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec == std::errc() && end == value.data() + value.size()) return std::min<uint64_t>(seconds, 1u << 30) * 1000;
    auto date = parse_http_date(value);
    if (!date) return std::nullopt;
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    const int64_t wait_ms = *date * 1000 - now_ms;
    return wait_ms > 0 ? uint64_t(wait_ms) : 0;
}

RetryDecision decide_retry(const RetryPolicy& policy, uint32_t attempt, int status, std::string_view retry_after,
                           bool any_token_received, std::chrono::system_clock::time_point now) {
    RetryDecision decision;
    if (status != 429 && status != 503) return decision;
    if (any_token_received) {
        decision.why_not = "the reply had started (a retry would start it over)";
        return decision;
    }
    if (attempt >= policy.max_attempts) {
        decision.why_not = "gave up after " + std::to_string(attempt) + " attempts";
        return decision;
    }
    if (auto asked = parse_retry_after_ms(retry_after, now)) {
        if (*asked > policy.max_wait_ms) {
            decision.why_not = "the server asks to wait " + std::to_string((*asked + 999) / 1000) + " s (Retry-After), more than " +
                               std::to_string(policy.max_wait_ms / 1000) + " s";
            return decision;
        }
        decision.retry = true;
        decision.wait_ms = *asked;
        return decision;
    }
    // Doubling from base_delay_ms: attempt 1 waits base, 2 waits 2*base, ... up to max_delay_ms.
    uint64_t wait_ms = policy.base_delay_ms;
    for (uint32_t i = 1; i < attempt && wait_ms < policy.max_delay_ms; ++i) wait_ms *= 2;
    decision.retry = true;
    decision.wait_ms = std::min<uint64_t>(wait_ms, policy.max_delay_ms);
    return decision;
}

} // namespace cflow::remote
