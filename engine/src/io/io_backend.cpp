#include "cflow/engine/io/io_backend.h"

namespace cflow {

std::string_view io_backend_name(IoBackend backend) {
    switch (backend) {
    case IoBackend::Auto: return "auto";
    case IoBackend::Uring: return "uring";
    case IoBackend::Overlapped: return "overlapped";
    case IoBackend::Threads: return "threads";
    }
    return "auto";
}

std::optional<IoBackend> parse_io_backend(std::string_view name) {
    for (IoBackend b : {IoBackend::Auto, IoBackend::Uring, IoBackend::Overlapped, IoBackend::Threads})
        if (name == io_backend_name(b)) return b;
    return std::nullopt;
}

} // namespace cflow
