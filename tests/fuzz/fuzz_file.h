#pragma once
// The readers under test open paths (they map files), so each input is written to one scratch
// file per fuzzing process, in /dev/shm where it exists (no disk I/O per execution).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include <unistd.h>

namespace cflow::fuzz {

inline std::string scratch_path(const char* suffix) {
    const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    return std::string(dir) + "/cflow-fuzz-" + std::to_string(getpid()) + suffix;
}

// Writes the input to `path` whole; false when it cannot (then the input is skipped).
inline bool write_input(const std::string& path, const uint8_t* data, size_t size) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    const bool ok = std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && ok;
}

} // namespace cflow::fuzz
