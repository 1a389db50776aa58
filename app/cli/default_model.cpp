#include "default_model.h"

#include <filesystem>
#include <system_error>

namespace cflow::cli {

std::optional<std::string> default_model_path(const std::string& exe_dir) {
    if (exe_dir.empty()) return std::nullopt;
    const std::filesystem::path dir(exe_dir);
    for (const auto& candidate : {dir / kDefaultModelFileName, dir / ".." / "share" / "cflow-studio" / kDefaultModelFileName}) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(candidate, ec))
            return std::filesystem::weakly_canonical(candidate, ec).string();
    }
    return std::nullopt;
}

std::optional<std::string> default_model_path() { return default_model_path(executable_dir()); }

} // namespace cflow::cli
