#include "load_args.h"

namespace cflow::cli {

Result<LoadOptions> parse_load_args(const Args& args) {
    LoadOptions load;
    const auto mode = args.value("--load");
    if (!mode || *mode == "map") load.mode = LoadMode::Map;
    else if (*mode == "read") load.mode = LoadMode::ReadAnon;
    else return make_error("--load must be 'map' or 'read' (got '" + *mode + "')");
    return load;
}

} // namespace cflow::cli
