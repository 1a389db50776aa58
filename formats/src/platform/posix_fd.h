#pragma once
// What the POSIX platform files share: a descriptor closed on scope exit, and the message of a
// failed call ("PATH: ACTION: strerror(errno)").
#include <cerrno>
#include <cstring>
#include <string>

#include <unistd.h>

namespace cflow::posix {

struct UniqueFd {
    int fd = -1;
    UniqueFd() = default;
    explicit UniqueFd(int descriptor) : fd(descriptor) {}
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() {
        if (fd >= 0) ::close(fd);
    }
};

// Reads errno: call it right after the failed call.
inline std::string errno_message(const std::string& path, const char* action) {
    return path + ": " + action + ": " + std::strerror(errno);
}

} // namespace cflow::posix
