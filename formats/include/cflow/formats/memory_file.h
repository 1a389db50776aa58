#pragma once
// Bytes the program made (generated or decoded tensors) presented as a MappedFile, so a
// SourceModel built in memory keeps its TensorView data alive through SourceModel::files
// exactly as a mapped checkpoint does, and the converter reads it the same way.
#include <cstdint>
#include <memory>
#include <string>

#include "cflow/base/result.h"
#include "cflow/formats/mapped_file.h"

namespace cflow {

class MemoryFile final : public MappedFile {
public:
    // Allocates `bytes` uninitialised bytes (the caller writes every one); fails with
    // ErrorKind::OutOfMemory naming `label` when the allocation is refused.
    static Result<std::shared_ptr<MemoryFile>> allocate(std::string label, uint64_t bytes);

    uint8_t* mutable_data() { return bytes_.get(); }

    const uint8_t* data() const override { return bytes_.get(); }
    uint64_t size() const override { return size_; }
    const std::string& path() const override { return label_; }
    LoadMode mode() const override { return LoadMode::ReadAnon; }
    void advise_willneed(uint64_t, uint64_t) const override {}  // already in memory
    uint64_t resident_bytes() const override { return size_; }

private:
    MemoryFile(std::string label, std::unique_ptr<uint8_t[]> bytes, uint64_t size)
        : label_(std::move(label)), bytes_(std::move(bytes)), size_(size) {}

    std::string label_;
    std::unique_ptr<uint8_t[]> bytes_;
    uint64_t size_ = 0;
};

} // namespace cflow
