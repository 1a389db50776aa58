#include "kv_cache_args.h"

namespace cflow::cli {

Result<KvCacheType> parse_kv_cache_arg(const Args& args, KvCacheType absent) {
    const auto value = args.value("--kv-cache");
    if (!value) return absent;
    if (auto type = parse_kv_cache_type(*value)) return *type;
    return make_error("--kv-cache must be 'f32' or 'f16' (got '" + *value + "')");
}

} // namespace cflow::cli
