#pragma once
// The --kv-cache f32|f16 option of the commands that run a session (generate, chat, serve, perplexity,
// bench, logits): how the KV cache stores keys and values (KvCacheType in cflow/engine/forward/session.h).
#include "cflow/engine/forward/session.h"
#include "cli_args.h"

namespace cflow::cli {

// `absent` when the option is not given: f16 for the commands that serve a user (generate, chat,
// serve, bench: half the cache memory; perplexity changes by under 0.2 % on the zoo and
// stories260K), f32 for the measuring ones (logits, perplexity: exact against the float64
// reference). Any value but f32/f16 is an error naming the option and the value.
Result<KvCacheType> parse_kv_cache_arg(const Args& args, KvCacheType absent);

} // namespace cflow::cli
