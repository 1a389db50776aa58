#include "io/async_reader.h"

namespace cflow {

Result<std::unique_ptr<AsyncReader>> AsyncReader::open(const std::string& path, IoBackend backend,
                                                       const AsyncReaderOptions& options) {
    switch (backend) {
    case IoBackend::Threads: return open_thread_pool_reader(path, options);
    case IoBackend::Uring:
    case IoBackend::Overlapped:
        if (backend != os_async_backend())
            return make_error(ErrorKind::Unsupported,
                              std::string(io_backend_name(backend)) + " I/O is not this OS's backend (it has " +
                                  std::string(io_backend_name(os_async_backend())) + " and threads)");
        return open_os_async_reader(path, options);
    case IoBackend::Auto: break;
    }
    auto os = open_os_async_reader(path, options);
    // Only "this OS cannot do it" falls back; a file that cannot be opened fails either way.
    if (os || os.kind() != ErrorKind::Unsupported) return os;
    auto pool = open_thread_pool_reader(path, options);
    if (pool) pool.value()->fallbackReason_ = os.error();
    return pool;
}

} // namespace cflow
