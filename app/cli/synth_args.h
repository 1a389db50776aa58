#pragma once
// `cflow synth`'s options into a SynthSpec: --preset or the required geometry flags, then every
// override, then check_synth_spec. Each option's own range is checked by the parser (cli_parser.cpp).
#include "cflow/base/result.h"
#include "cflow/formats/synth/synth_spec.h"
#include "command_args.h"

namespace cflow::cli {

Result<SynthSpec> synth_spec_from_args(const SynthArgs& args);

} // namespace cflow::cli
