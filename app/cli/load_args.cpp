#include "load_args.h"

namespace cflow::cli {

bool is_load_mode(std::string_view mode) { return mode == "auto" || mode == "map" || mode == "read" || mode == "lanes"; }

std::string load_mode_error(const std::string& mode) {
    return "--load must be 'auto', 'map', 'read' or 'lanes' (got '" + mode + "')";
}

Result<LoadChoice> parse_load_arg(const std::string& mode, const std::string& modelPath, bool expertsReadFromFile) {
    if (mode == "auto") return choose_load_options(modelPath, expertsReadFromFile);
    LoadChoice choice{LoadOptions{}, mode, "--load " + mode};
    if (mode == "map") choice.options.mode = LoadMode::Map;
    else if (mode == "read") choice.options.mode = LoadMode::ReadAnon;
    else if (mode == "lanes") choice.options.lanes = true;  // mapped, with the matrices in a rearranged copy
    else return make_error(load_mode_error(mode));
    return choice;
}

} // namespace cflow::cli
