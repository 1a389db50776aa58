#pragma once
// The --combine-style option shared by critical-path and synth: a CombineStyle by number or name.
#include <string>

#include "cflow/base/result.h"
#include "cflow/formats/cflow_layout.h"

namespace cflow::cli {

// "0".."6" or a label as critical_path.h's combine_style_label spells it ("DelayedSum", ...);
// the error names the option and lists what is accepted.
Result<CombineStyle> parse_combine_style(const std::string& text);

} // namespace cflow::cli
