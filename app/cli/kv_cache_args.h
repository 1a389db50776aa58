#pragma once
// The --kv-cache f32|f16 option of the commands that run a session (generate, chat, perplexity,
// bench): how the KV cache stores keys and values (KvCacheType in cflow/engine/forward/session.h).
#include "cflow/engine/forward/session.h"
#include "cli_args.h"

namespace cflow::cli {

// f32 when the option is absent; any value but f32/f16 is an error naming the option and the value.
Result<KvCacheType> parse_kv_cache_arg(const Args& args);

} // namespace cflow::cli
