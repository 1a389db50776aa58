#include "session_args.h"

#include <chrono>

#include "cli_options.h"
#include "load_args.h"

namespace cflow::cli {

CLI::Option* add_threads_option(CLI::App& app, unsigned& threads, const std::string& help) {
    return app.add_option("--threads", threads, help.empty() ? "worker threads (0: one per core)" : help)
        ->check(integer_in(0, 1024))
        ->type_name("N")
        ->capture_default_str();
}

void add_expert_cache_options(CLI::App& app, SessionArgs& args) {
    app.add_option_function<std::string>(
           "--cache-mib", [&args](const std::string& value) { args.cache_mib = *parse_cache_mib(value); },
           "RAM cache of M MiB of experts for sync/staged (0: off; fit: half the free memory less the model's "
           "resident bytes, at most the expert bank)")
        ->check(text_check([](const std::string& v) { return bool(parse_cache_mib(v)); },
                           [](const std::string& v) { return parse_cache_mib(v).error(); }))
        ->type_name("M|fit")
        ->default_str("0");
    app.add_option("--io-backend", args.io_backend,
                   "how sync/staged expert reads reach the OS (auto: io_uring on Linux, overlapped I/O on Windows, "
                   "reader threads where that cannot start)")
        ->transform(enum_choice<IoBackend>(parse_io_backend, "",
                                           "--io-backend must be 'auto', 'uring', 'overlapped' or 'threads'"))
        ->type_name("auto|uring|overlapped|threads")
        ->default_str("auto");
}

void add_session_options(CLI::App& app, SessionArgs& args, unsigned groups, const std::string& threads_help) {
    add_threads_option(app, args.threads, threads_help);
    if (groups & kSessionContext)
        app.add_option("--ctx", args.ctx, "context length in tokens (0: the model's)")
            ->check(integer_in(0, 1 << 24))
            ->type_name("N")
            ->capture_default_str();
    if (groups & kSessionLoad)
        app.add_option("--load", args.load,
                       "how the weights are brought in: auto (the lanes layout where the kernels use it and the file "
                       "fits in memory, else map), map (zero-copy mapping), read (a copy in anonymous memory), lanes "
                       "(mapped, matrices in a rearranged copy)")
            ->check(text_check([](const std::string& v) { return is_load_mode(v); }, load_mode_error))
            ->type_name("auto|map|read|lanes")
            ->capture_default_str();
    if (groups & kSessionKvCache)
        app.add_option("--kv-cache", args.kv_cache, "KV cache storage: f16 halves its memory, f32 keeps it exact")
            ->transform(enum_choice<KvCacheType>(parse_kv_cache_type, "", "--kv-cache must be 'f32' or 'f16'"))
            ->type_name("f16|f32")
            ->default_str(std::string(kv_cache_type_name(args.kv_cache)));
    if (groups & kSessionExpertFetch) {
        app.add_option("--expert-fetch", args.expert_fetch,
                       "where a MoE model's experts come from: mapped (the page cache), sync (direct-I/O reads waited "
                       "for at the routing layer), staged (the same reads overlapped with the layers up to the "
                       "injection layer)")
            ->transform(enum_choice<ExpertFetch>(parse_expert_fetch, "",
                                                 "--expert-fetch must be 'mapped', 'sync' or 'staged'"))
            ->type_name("mapped|sync|staged")
            ->default_str("mapped");
        add_expert_cache_options(app, args);
    }
}

Status check_session_args(const SessionArgs& args) { return check_io_backend_for(args.io_backend, args.expert_fetch); }

SessionOptions session_options_from(const SessionArgs& args) {
    SessionOptions options;
    options.threads = args.threads;
    options.context_length = args.ctx;
    options.kv_cache = args.kv_cache;
    options.expert_fetch = args.expert_fetch;
    options.io_backend = args.io_backend;
    return options;
}

Result<LoadedModel> load_for_session(const SessionArgs& args, const std::string& model_path) {
    if (Status st = check_session_args(args); !st) return st.take_error();
    LoadedModel loaded;
    auto load = parse_load_arg(args.load, model_path, args.expert_fetch != ExpertFetch::Mapped);
    if (!load) return load.take_error();
    loaded.load = std::move(load).value();
    loaded.options = session_options_from(args);
    const auto t_load = std::chrono::steady_clock::now();
    auto model = load_model(model_path, loaded.load);
    if (!model) return model.take_error();
    loaded.load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
    loaded.model = std::move(model).value();
    if (args.cache_mib) {
        auto bytes = expert_cache_bytes_for(*args.cache_mib, loaded.options.expert_fetch, *loaded.model);
        if (!bytes) return bytes.take_error();
        loaded.options.expert_cache_bytes = *bytes;
    }
    return loaded;
}

} // namespace cflow::cli
