#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/direct_reader.h"
#include "io/platform/open_direct_posix.h"
#include "io/read_progress.h"

namespace cflow {
namespace {

class PosixDirectReader final : public DirectReader {
public:
    PosixDirectReader(ReadFileFacts facts, int fd) : facts_(std::move(facts)), fd_(fd) {}
    ~PosixDirectReader() override { ::close(fd_); }

    Status read(uint64_t offset, uint64_t bytes, void* destination) override {
        ReadProgress progress{offset, bytes, static_cast<uint8_t*>(destination)};
        while (progress.doneBytes < progress.bytes) {
            const ssize_t n = ::pread(fd_, progress.next_destination(), progress.next_bytes(), off_t(progress.next_offset()));
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n < 0) return read_failure(facts_, progress, std::strerror(errno));
            auto outcome = account_piece(progress, uint64_t(n), facts_);
            if (!outcome) return outcome.take_error();
            if (*outcome == PieceOutcome::Finished) break;
        }
        return {};
    }
    uint64_t alignment() const override { return facts_.alignment; }
    bool direct() const override { return facts_.direct; }
    uint64_t file_bytes() const override { return facts_.fileBytes; }

private:
    ReadFileFacts facts_;
    int fd_;
};

} // namespace

Result<std::unique_ptr<DirectReader>> DirectReader::open(const std::string& path) {
    auto file = open_for_direct_reads(path);
    if (!file) return file.take_error();
    return std::unique_ptr<DirectReader>(new PosixDirectReader(std::move(file->facts), file->fd));
}

} // namespace cflow
