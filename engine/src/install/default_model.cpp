#include "cflow/engine/install/default_model.h"

#include <filesystem>
#include <system_error>

#include "cflow/base/utf8_path.h"
#include "cflow/engine/install/executable_dir.h"

namespace cflow {

std::vector<std::string> default_model_candidates(const std::string& exe_dir) {
    if (exe_dir.empty()) return {};
    const std::filesystem::path dir = path_from_utf8(exe_dir);
    return {utf8_from_path(dir / kDefaultModelFileName),
            utf8_from_path(dir / ".." / "share" / "cflow-studio" / kDefaultModelFileName)};
}

std::optional<std::string> default_model_path(const std::string& exe_dir) {
    for (const std::string& candidate : default_model_candidates(exe_dir)) {
        const std::filesystem::path path = path_from_utf8(candidate);
        std::error_code ec;
        if (!std::filesystem::is_regular_file(path, ec)) continue;
        // Lexical, not canonical: the installed copy reads as <prefix>/share/..., whatever links the prefix holds.
        const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
        if (ec) continue;
        return utf8_from_path(absolute.lexically_normal());
    }
    return std::nullopt;
}

std::optional<std::string> default_model_path() { return default_model_path(executable_dir()); }

} // namespace cflow
