#include "load_args.h"

namespace cflow::cli {

Result<LoadChoice> parse_load_args(const Args& args, const std::string& modelPath, bool expertsReadFromFile,
                                   std::string_view whenAbsent) {
    const auto given = args.value("--load");
    const std::string mode = given ? *given : std::string(whenAbsent);
    if (mode == "auto") return choose_load_options(modelPath, expertsReadFromFile);
    LoadChoice choice{LoadOptions{}, mode, "--load " + mode};
    if (mode == "map") choice.options.mode = LoadMode::Map;
    else if (mode == "read") choice.options.mode = LoadMode::ReadAnon;
    else if (mode == "lanes") choice.options.lanes = true;  // mapped, with the matrices in a rearranged copy
    else return make_error("--load must be 'auto', 'map', 'read' or 'lanes' (got '" + mode + "')");
    return choice;
}

} // namespace cflow::cli
