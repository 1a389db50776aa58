#include "combine_style_arg.h"

#include "cflow/engine/forward/critical_path.h"

namespace cflow::cli {

Result<CombineStyle> parse_combine_style(const std::string& text) {
    for (uint8_t i = 0; i <= static_cast<uint8_t>(CombineStyle::FixedPoint); ++i) {
        const auto style = static_cast<CombineStyle>(i);
        if (text == std::to_string(i) || text == combine_style_label(style)) return style;
    }
    return make_error("option --combine-style: '" + text + "' is not 0-6 or a style name (e.g. DelayedSum)");
}

} // namespace cflow::cli
