#include "io/json_file.h"

#include <filesystem>
#include <system_error>

#include "cflow/base/utf8_path.h"
#include "cflow/formats/mapped_file.h"

namespace cflow {

Status write_json_file(const std::string& path, const nlohmann::json& j) {
    const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::error_code ec;
    const std::filesystem::path file = path_from_utf8(path);
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
    if (ec) return make_error(ErrorKind::Io, path + ": cannot create its folder: " + ec.message());
    AtomicFileWriter out(path);
    if (Status s = out.open(); !s) return s;
    if (Status s = out.write(text.data(), text.size()); !s) return s;
    return out.commit();
}

} // namespace cflow
