#include "default_model.h"

#include "cflow/engine/install/default_model.h"

namespace cflow::cli {

Result<std::string> model_argument_or_default(const std::vector<std::string>& positionals) {
    if (positionals.size() > 1) return make_error("expected at most one MODEL.cflow");
    if (positionals.size() == 1) return positionals[0];
    if (auto bundled = default_model_path()) return *bundled;
    return make_error(std::string("no MODEL.cflow given and no bundled default model (") + kDefaultModelFileName +
                      " beside cflow or in ../share/cflow-studio)");
}

} // namespace cflow::cli
