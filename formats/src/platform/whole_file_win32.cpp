// Windows side of whole_file.h: the file's attributes decide before it is opened (a named
// pipe or device path is refused), then a size-capped read.
#include <filesystem>
#include <fstream>
#include <system_error>

#include "cflow/base/utf8_path.h"
#include "cflow/formats/whole_file.h"

namespace cflow {

Status require_regular_file(const std::string& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path_from_utf8(path), ec);
    if (ec) return make_error(ErrorKind::Io, path + ": cannot inspect: " + ec.message());
    if (!std::filesystem::is_regular_file(status)) return make_error(path + ": is not a regular file");
    return {};
}

Result<std::string> read_whole_file(const std::string& path, uint64_t max_bytes, const char* what) {
    if (Status regular = require_regular_file(path); !regular) return regular.take_error();
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path_from_utf8(path), ec);
    if (ec) return make_error(ErrorKind::Io, path + ": cannot read its size: " + ec.message());
    if (size > max_bytes)
        return make_error(path + ": " + std::to_string(size) + " bytes is more than the " + std::to_string(max_bytes) +
                          "-byte limit for " + what);
    std::ifstream in(path_from_utf8(path), std::ios::binary);
    if (!in) return make_error(ErrorKind::Io, path + ": cannot open");
    std::string bytes(size, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    bytes.resize(static_cast<size_t>(in.gcount()));
    return bytes;
}

} // namespace cflow
