#pragma once
// Paths as every layer passes them: UTF-8 std::strings, on Windows too (formats' MappedFile widens
// them as UTF-8). A std::filesystem narrow string is the ANSI code page on Windows, so the
// conversions go through char8_t; elsewhere they copy the bytes.
#include <filesystem>
#include <string>
#include <string_view>

namespace cflow {

inline std::filesystem::path path_from_utf8(std::string_view utf8) {
    return std::filesystem::path(std::u8string(utf8.begin(), utf8.end()));
}

inline std::string utf8_from_path(const std::filesystem::path& path) {
    const std::u8string utf8 = path.u8string();
    return std::string(utf8.begin(), utf8.end());
}

} // namespace cflow
