#pragma once
// A large zero-filled float array whose pages become resident only when written: calloc of a
// large block is a demand-zero anonymous mapping (Linux) or demand-zero committed pages
// (Windows), unlike std::vector, whose resize writes every zero. The KV cache is allocated for
// the whole context but costs resident memory only for the positions a conversation used.
#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace cflow {

class ZeroedFloats {
public:
    ZeroedFloats() = default;
    // Throws std::bad_alloc like the vector it replaces (Session::create reports it).
    explicit ZeroedFloats(size_t count)
        : data_(static_cast<float*>(std::calloc(count == 0 ? 1 : count, sizeof(float)))), size_(count) {
        if (!data_) throw std::bad_alloc();
    }
    float* data() { return data_.get(); }
    const float* data() const { return data_.get(); }
    size_t size() const { return size_; }

private:
    struct Free {
        void operator()(float* p) const { std::free(p); }
    };
    std::unique_ptr<float, Free> data_;
    size_t size_ = 0;
};

} // namespace cflow
