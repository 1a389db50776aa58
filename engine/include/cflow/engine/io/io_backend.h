#pragma once
// How the direct-I/O expert fetch (ExpertFetch::Staged and Sync) talks to the OS: one
// asynchronous read interface (engine/src/io/async_reader.h) with one backend per OS and a
// portable one.
//   Uring      Linux io_uring through liburing: reads are queued in the kernel, no reader threads
//   Overlapped Windows overlapped ReadFile (FILE_FLAG_OVERLAPPED | FILE_FLAG_NO_BUFFERING)
//   Threads    a pool of reader threads, each doing blocking positioned reads (any OS)
//   Auto       the OS's asynchronous backend, and Threads where it is unavailable (a kernel
//              without io_uring, a seccomp filter that refuses it, a build without liburing);
//              the session then says why (Session::io_backend_note()).
// An explicit Uring or Overlapped that cannot run fails with Unsupported and the reason.
#include <cstdint>
#include <optional>
#include <string_view>

namespace cflow {

enum class IoBackend : uint8_t { Auto = 0, Uring = 1, Overlapped = 2, Threads = 3 };
std::string_view io_backend_name(IoBackend backend);  // "auto", "uring", "overlapped", "threads"
std::optional<IoBackend> parse_io_backend(std::string_view name);

} // namespace cflow
