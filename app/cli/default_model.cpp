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

Result<std::string> model_argument_or_default(const std::vector<std::string>& positionals) {
    if (positionals.size() > 1) return make_error("expected at most one MODEL.cflow");
    if (positionals.size() == 1) return positionals[0];
    if (auto bundled = default_model_path()) return *bundled;
    return make_error(std::string("no MODEL.cflow given and no bundled default model (") + kDefaultModelFileName +
                      " beside cflow or in ../share/cflow-studio)");
}

} // namespace cflow::cli
