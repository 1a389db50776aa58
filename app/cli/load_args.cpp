#include "load_args.h"

namespace cflow::cli {

Result<LoadOptions> parse_load_args(const Args& args) {
    LoadOptions load;
    const auto mode = args.value("--load");
    if (!mode || *mode == "map") load.mode = LoadMode::Map;
    else if (*mode == "read") load.mode = LoadMode::ReadAnon;
    else if (*mode == "lanes") load.lanes = true;  // mapped, with the matrices in a rearranged copy
    else return make_error("--load must be 'map', 'read' or 'lanes' (got '" + *mode + "')");
    return load;
}

} // namespace cflow::cli
