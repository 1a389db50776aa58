#pragma once
// The --load map|read|lanes option of the commands that load a model (generate, chat, perplexity):
// how Model::load brings the weights in (LoadMode in cflow/engine/forward/model.h).
#include "cflow/engine/forward/model.h"
#include "cli_args.h"

namespace cflow::cli {

// LoadOptions from --load: "map" (zero-copy mmap, also the default when it is absent) or "read"
// (a copy in anonymous memory); any other value is an error that names the option and the value.
Result<LoadOptions> parse_load_args(const Args& args);

} // namespace cflow::cli
