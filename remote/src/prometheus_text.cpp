#include "cflow/remote/prometheus_text.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace cflow::remote {
namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

void skip_blanks(std::string_view line, size_t& at) {
    while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
}

// A sample value as Prometheus spells it; false for anything else.
bool read_value(std::string_view text, double& value) {
    if (text == "NaN") value = std::numeric_limits<double>::quiet_NaN();
    else if (text == "+Inf" || text == "Inf") value = std::numeric_limits<double>::infinity();
    else if (text == "-Inf") value = -std::numeric_limits<double>::infinity();
    else {
        const std::string copy(text);  // strtod needs a terminated string
        char* end = nullptr;
        errno = 0;
        value = std::strtod(copy.c_str(), &end);
        if (copy.empty() || end != copy.c_str() + copy.size() || errno == ERANGE) return false;
    }
    return true;
}

// Reads `{k="v",...}` from line[at] (at is on the '{'); the error says what was expected.
Result<std::vector<std::pair<std::string, std::string>>> read_labels(std::string_view line, size_t& at) {
    std::vector<std::pair<std::string, std::string>> labels;
    ++at;  // '{'
    for (;;) {
        skip_blanks(line, at);
        if (at < line.size() && line[at] == '}') {
            ++at;
            return labels;
        }
        const size_t key_start = at;
        if (at >= line.size() || !is_name_start(line[at])) return make_error(ErrorKind::InvalidInput, "expected a label name");
        while (at < line.size() && is_name_char(line[at])) ++at;
        std::string key(line.substr(key_start, at - key_start));
        skip_blanks(line, at);
        if (at + 1 >= line.size() || line[at] != '=' || line[at + 1] != '"')
            return make_error(ErrorKind::InvalidInput, "expected =\"...\" after label " + key);
        at += 2;
        std::string value;
        for (;;) {
            if (at >= line.size()) return make_error(ErrorKind::InvalidInput, "label " + key + "'s value has no closing quote");
            const char c = line[at++];
            if (c == '"') break;
            if (c != '\\') {
                value += c;
                continue;
            }
            if (at >= line.size()) return make_error(ErrorKind::InvalidInput, "label " + key + "'s value ends in a backslash");
            const char escaped = line[at++];
            value += escaped == 'n' ? '\n' : escaped;  // \\ and \" stand for themselves
        }
        labels.emplace_back(std::move(key), std::move(value));
        skip_blanks(line, at);
        if (at < line.size() && line[at] == ',') ++at;
        else if (at >= line.size() || line[at] != '}') return make_error(ErrorKind::InvalidInput, "expected , or } after a label");
    }
}

} // namespace

std::string PrometheusSample::label(std::string_view key) const {
    for (const auto& [k, v] : labels)
        if (k == key) return v;
    return {};
}

Result<std::vector<PrometheusSample>> parse_prometheus_text(std::string_view text) {
    std::vector<PrometheusSample> samples;
    size_t line_number = 0;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++line_number;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
        size_t at = 0;
        skip_blanks(line, at);
        if (at == line.size() || line[at] == '#') continue;
        const auto fail = [&](const std::string& what) {
            return make_error(ErrorKind::InvalidInput, "metrics line " + std::to_string(line_number) + ": " + what);
        };
        PrometheusSample sample;
        const size_t name_start = at;
        if (!is_name_start(line[at])) return fail("expected a metric name");
        while (at < line.size() && is_name_char(line[at])) ++at;
        sample.name = std::string(line.substr(name_start, at - name_start));
        skip_blanks(line, at);
        if (at < line.size() && line[at] == '{') {
            auto labels = read_labels(line, at);
            if (!labels) return fail(labels.error());
            sample.labels = std::move(*labels);
        }
        skip_blanks(line, at);
        const size_t value_start = at;
        while (at < line.size() && line[at] != ' ' && line[at] != '\t') ++at;
        if (!read_value(line.substr(value_start, at - value_start), sample.value))
            return fail(sample.name + " has no number for its value");
        // An optional timestamp (integer milliseconds) may follow; nothing else.
        skip_blanks(line, at);
        if (at < line.size()) {
            double timestamp = 0;
            if (!read_value(line.substr(at), timestamp) || !std::isfinite(timestamp)) return fail("unexpected text after the value");
        }
        samples.push_back(std::move(sample));
    }
    return samples;
}

} // namespace cflow::remote
