#pragma once
// The --load auto|map|read|lanes option of the commands that load a model (generate, chat, serve,
// perplexity, logits): how Model::load brings the weights in (LoadOptions in
// cflow/engine/forward/model.h; auto: choose_load_options in cflow/engine/forward/load_policy.h).
#include <string>
#include <string_view>

#include "cflow/engine/forward/load_policy.h"
#include "cflow/base/result.h"

namespace cflow::cli {

// Whether `mode` is one of the names --load accepts.
bool is_load_mode(std::string_view mode);
// The message for a --load value that is none of them.
std::string load_mode_error(const std::string& mode);

// The LoadChoice --load names for the model at modelPath: "auto" (the lanes layout where the
// kernels walk it and the file fits in memory, else the mapping), "map" (zero-copy mmap), "read"
// (a copy in anonymous memory) or "lanes". Any other value is an error that names the option and
// the value (the parser already refuses one).
Result<LoadChoice> parse_load_arg(const std::string& mode, const std::string& modelPath, bool expertsReadFromFile);

} // namespace cflow::cli
