#include <cstdio>

#include "console.h"

namespace cflow::cli {

namespace {
std::string size_limit_text(uint64_t max_bytes) {
    return max_bytes % (1 << 20) == 0 ? std::to_string(max_bytes >> 20) + " MiB" : std::to_string(max_bytes) + " bytes";
}
} // namespace

Result<std::string> read_all_stdin(uint64_t max_bytes) {
    std::string text;
    char buffer[1 << 16];
    for (;;) {
        const size_t n = std::fread(buffer, 1, sizeof(buffer), stdin);
        if (text.size() + n > max_bytes)
            return make_error("stdin: more than " + size_limit_text(max_bytes) + " of input (the limit for one read)");
        text.append(buffer, n);
        if (n < sizeof(buffer)) break;
    }
    if (std::ferror(stdin)) return make_error(ErrorKind::Io, "stdin: read error");
    return text;
}

Result<std::optional<std::string>> read_stdin_line(uint64_t max_bytes) {
    std::string line;
    for (;;) {
        const int c = std::getc(stdin);
        if (c == EOF) {
            if (std::ferror(stdin)) return make_error(ErrorKind::Io, "stdin: read error");
            if (line.empty()) return std::optional<std::string>();
            break;
        }
        if (c == '\n') break;
        if (line.size() >= max_bytes)
            return make_error("stdin: a line longer than " + size_limit_text(max_bytes) + " (the limit for one message)");
        line.push_back(static_cast<char>(c));
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return std::optional<std::string>(std::move(line));
}

std::string terminal_safe(std::string_view text) {
    static const char kHex[] = "0123456789abcdef";
    auto escape = [](std::string& out, unsigned char byte) {
        out += "\\x";
        out += kHex[byte >> 4];
        out += kHex[byte & 15];
    };
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        if ((byte < 0x20 && byte != '\t') || byte == 0x7f) {
            escape(out, byte);
        } else if (byte == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
            escape(out, static_cast<unsigned char>(text[++i]));  // U+0080..U+009F: C1 controls (CSI is U+009B)
        } else {
            out += static_cast<char>(byte);
        }
    }
    return out;
}

bool write_stdout(const std::string& bytes) {
    const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    return std::fflush(stdout) == 0 && written == bytes.size();
}

} // namespace cflow::cli
