#pragma once
// The session options shared by the commands that run a model, declared once for the parser:
//   --threads N                          worker threads (0: one per core), 0..1024
//   --ctx N                              context length (0: the model's)
//   --load auto|map|read|lanes           how Model::load brings the weights in (load_policy.h)
//   --kv-cache f16|f32                   how the KV cache stores keys and values
//   --expert-fetch mapped|sync|staged    where a MoE model's expert tiles come from
//   --cache-mib M|fit                    RAM expert cache for sync/staged (expert_fetch_args.h)
//   --io-backend auto|uring|overlapped|threads
// Each command picks the groups it has (SessionGroups) and its own defaults (the struct's values
// when the options are added are the defaults --help shows).
#include <cstdint>
#include <optional>
#include <string>

#include "cflow/engine/forward/load_policy.h"
#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include "expert_fetch_args.h"

namespace CLI {
class App;
class Option;
} // namespace CLI

namespace cflow::cli {

struct SessionArgs {
    unsigned threads = 0;
    uint32_t ctx = 0;
    std::string load = "auto";
    KvCacheType kv_cache = KvCacheType::F16;
    ExpertFetch expert_fetch = ExpertFetch::Mapped;
    std::optional<CacheSizeArg> cache_mib;  // absent: no cache
    IoBackend io_backend = IoBackend::Auto;
};

enum SessionGroups : unsigned {
    kSessionContext = 1u << 0,      // --ctx
    kSessionLoad = 1u << 1,         // --load
    kSessionKvCache = 1u << 2,      // --kv-cache
    kSessionExpertFetch = 1u << 3,  // --expert-fetch, --cache-mib, --io-backend
    kSessionAll = kSessionContext | kSessionLoad | kSessionKvCache | kSessionExpertFetch,
};

// --threads N (0..1024, 0: one per core), the one declaration every command uses; `help` says
// what 0 means where a command differs.
CLI::Option* add_threads_option(CLI::App& app, unsigned& threads, const std::string& help = "");
// --cache-mib M|fit and --io-backend, also used alone by `bench experts`.
void add_expert_cache_options(CLI::App& app, SessionArgs& args);
// The groups of options asked for, bound to `args` (whose current values are the defaults).
void add_session_options(CLI::App& app, SessionArgs& args, unsigned groups, const std::string& threads_help = "");

// What parsing alone cannot check: an explicit --io-backend with the mapped arm.
Status check_session_args(const SessionArgs& args);
// SessionOptions from the arguments (no expert cache: that needs the model, see load_for_session).
SessionOptions session_options_from(const SessionArgs& args);

// A model loaded as the arguments ask, with the SessionOptions for it (the expert cache resolved
// against the model): the block generate, chat and serve share.
struct LoadedModel {
    std::shared_ptr<const Model> model;
    LoadChoice load;
    SessionOptions options;
    double load_ms = 0;
};
Result<LoadedModel> load_for_session(const SessionArgs& args, const std::string& model_path);

} // namespace cflow::cli
