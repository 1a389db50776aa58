#pragma once
// The --load auto|map|read|lanes option of the commands that load a model (generate, chat, serve,
// perplexity, logits): how Model::load brings the weights in (LoadOptions in
// cflow/engine/forward/model.h; auto: choose_load_options in cflow/engine/forward/load_policy.h).
#include <string>
#include <string_view>

#include "cflow/engine/forward/load_policy.h"
#include "cli_args.h"

namespace cflow::cli {

// The LoadChoice --load names for the model at modelPath: "auto" (the lanes layout where the
// kernels walk it and the file fits in memory, else the mapping), "map" (zero-copy mmap), "read"
// (a copy in anonymous memory) or "lanes"; whenAbsent when the option is not given. Any other
// value is an error that names the option and the value.
Result<LoadChoice> parse_load_args(const Args& args, const std::string& modelPath, bool expertsReadFromFile,
                                   std::string_view whenAbsent = "auto");

} // namespace cflow::cli
