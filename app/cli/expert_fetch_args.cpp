#include "expert_fetch_args.h"

#include <charconv>
#include <string>

#include "cflow/engine/io/expert_cache_budget.h"
#include "cflow/engine/io/system_memory.h"

namespace cflow::cli {

namespace {
constexpr uint64_t kMaxCacheMib = uint64_t(1) << 24;  // 16 TiB: past any RAM, and no overflow in bytes
}

Result<CacheSizeArg> parse_cache_mib(const std::string& value) {
    if (value == "fit") return CacheSizeArg{true, 0};
    uint64_t mib = 0;
    const char* first = value.data();
    const char* last = first + value.size();
    const auto [end, ec] = std::from_chars(first, last, mib);
    if (value.empty() || ec != std::errc{} || end != last || mib > kMaxCacheMib)
        return make_error("--cache-mib must be a whole number of MiB from 0 (off) to " + std::to_string(kMaxCacheMib) +
                          ", or 'fit' (got '" + value + "')");
    return CacheSizeArg{false, mib};
}

Status check_io_backend_for(IoBackend backend, ExpertFetch fetch) {
    if (fetch == ExpertFetch::Mapped && backend != IoBackend::Auto)
        return make_error("--io-backend needs --expert-fetch sync or staged (mapped experts are read through the page cache)");
    return {};
}

uint64_t resolve_cache_bytes(const CacheSizeArg& arg, const Model& model) {
    if (arg.fit) return expert_cache_fit_bytes(model, query_system_memory());
    return arg.mib << 20;
}

Result<uint64_t> expert_cache_bytes_for(const CacheSizeArg& arg, ExpertFetch fetch, const Model& model) {
    if (fetch == ExpertFetch::Mapped && (arg.fit || arg.mib > 0))
        return make_error("--cache-mib needs --expert-fetch sync or staged (mapped experts are cached by the OS page cache)");
    return resolve_cache_bytes(arg, model);
}

} // namespace cflow::cli
