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

namespace {

// Lexical, not canonical: the installed copy reads as <prefix>/share/..., whatever links the prefix holds.
std::optional<std::string> absolute_normal(const std::filesystem::path& path) {
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
    if (ec) return std::nullopt;
    return utf8_from_path(absolute.lexically_normal());
}

} // namespace

std::optional<std::string> default_model_path(const std::string& exe_dir) {
    for (const std::string& candidate : default_model_candidates(exe_dir)) {
        const std::filesystem::path path = path_from_utf8(candidate);
        std::error_code ec;
        if (!std::filesystem::is_regular_file(path, ec)) continue;
        if (auto found = absolute_normal(path)) return found;
    }
    return std::nullopt;
}

std::optional<std::string> default_model_path() { return default_model_path(executable_dir()); }

std::optional<std::string> bundled_models_dir(const std::string& exe_dir) {
    for (const std::string& candidate : default_model_candidates(exe_dir)) {
        const std::filesystem::path dir = path_from_utf8(candidate).parent_path() / "models";
        std::error_code ec;
        if (!std::filesystem::is_regular_file(dir / kBundledModelsIndexName, ec)) continue;
        if (auto found = absolute_normal(dir)) return found;
    }
    return std::nullopt;
}

std::optional<std::string> bundled_models_dir() { return bundled_models_dir(executable_dir()); }

} // namespace cflow
