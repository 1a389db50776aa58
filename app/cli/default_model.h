#pragma once
// The MODEL argument of `cflow generate` / `cflow chat`: the one positional, else the bundled
// default model (cflow/engine/install/default_model.h says where it is looked for).
#include <string>
#include <vector>

#include "cflow/base/result.h"

namespace cflow::cli {

// The only positional, else the bundled default model; an error says which is missing.
Result<std::string> model_argument_or_default(const std::vector<std::string>& positionals);

} // namespace cflow::cli
