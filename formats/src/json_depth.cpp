#include "cflow/formats/json_depth.h"

namespace cflow {

size_t json_nesting_depth(std::string_view text) {
    size_t depth = 0, deepest = 0;
    bool inString = false, escaped = false;
    for (const char c : text) {
        if (inString) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') inString = false;
            continue;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest) deepest = depth;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

Status check_json_depth(std::string_view text, const std::string& what, size_t max_depth) {
    const size_t depth = json_nesting_depth(text);
    if (depth > max_depth)
        return make_error(what + ": JSON nested " + std::to_string(depth) + " levels deep; at most " +
                          std::to_string(max_depth) + " are accepted");
    return {};
}

} // namespace cflow
