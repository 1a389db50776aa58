#pragma once
// The expert-fetch options of the commands that run a session on a MoE model:
//   --expert-fetch mapped|sync|staged   where expert tiles come from (ExpertFetch)
//   --cache-mib M|fit                   RAM expert cache for sync/staged, in MiB (0 = off), or
//                                       'fit': expert_cache_fit_bytes (half of free memory minus
//                                       the model's resident bytes, at most the expert bank)
//   --io-backend auto|uring|overlapped|threads
//                                       how sync/staged reads reach the OS (IoBackend): auto = io_uring
//                                       on Linux, overlapped I/O on Windows, the reader pool where that
//                                       cannot start; an explicit one that cannot run here is an error
// Checked while parsing (session_args.cpp: bad values fail before anything loads), resolved
// against the model after.
#include <cstdint>
#include <optional>

#include "cflow/engine/forward/model.h"
#include "cflow/engine/forward/session.h"
#include <string>

namespace cflow::cli {

struct CacheSizeArg {
    bool fit = false;
    uint64_t mib = 0;  // when !fit; 0 = off
};

// --cache-mib's value: a whole number of MiB (0 = off) or 'fit'; anything else is an error
// naming the option.
Result<CacheSizeArg> parse_cache_mib(const std::string& value);

// An explicit --io-backend with the mapped arm is an error (mapped experts are not read by it).
Status check_io_backend_for(IoBackend backend, ExpertFetch fetch);

// Bytes of cache the argument asks for on this model (fit: from the memory available now).
uint64_t resolve_cache_bytes(const CacheSizeArg& arg, const Model& model);
// resolve_cache_bytes for a session's fetch arm: a non-zero cache with the mapped arm is an error
// (the OS page cache is that arm's cache; a silently unused budget would mislead).
Result<uint64_t> expert_cache_bytes_for(const CacheSizeArg& arg, ExpertFetch fetch, const Model& model);

} // namespace cflow::cli
