#include "cflow/engine/forward/load_check.h"

#include "cflow/engine/forward/model.h"

namespace cflow {

Status check_model_loads(const std::string& written_path, const std::string& shown_path) {
    auto model = Model::load(written_path);
    if (model) return {};
    std::string message = model.error();
    for (size_t at = message.find(written_path); at != std::string::npos; at = message.find(written_path, at + shown_path.size()))
        message.replace(at, written_path.size(), shown_path);
    return make_error(model.kind(), "the converted file does not load, so " + shown_path + " was left as it was: " + message);
}

} // namespace cflow
