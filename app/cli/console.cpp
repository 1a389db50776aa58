#include <cstdio>

#include "console.h"

namespace cflow::cli {

std::optional<std::string> read_all_stdin() {
    std::string text;
    char buffer[1 << 16];
    for (;;) {
        const size_t n = std::fread(buffer, 1, sizeof(buffer), stdin);
        text.append(buffer, n);
        if (n < sizeof(buffer)) break;
    }
    if (std::ferror(stdin)) return std::nullopt;
    return text;
}

bool write_stdout(const std::string& bytes) {
    const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    return std::fflush(stdout) == 0 && written == bytes.size();
}

} // namespace cflow::cli
