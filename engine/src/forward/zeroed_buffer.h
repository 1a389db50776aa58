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

template <class T>
class ZeroedArray {
public:
    ZeroedArray() = default;
    // Throws std::bad_alloc like the vector it replaces (Session::create reports it).
    explicit ZeroedArray(size_t count)
        : data_(static_cast<T*>(std::calloc(count == 0 ? 1 : count, sizeof(T)))), size_(count) {
        if (!data_) throw std::bad_alloc();
    }
    T* data() { return data_.get(); }
    const T* data() const { return data_.get(); }
    size_t size() const { return size_; }

private:
    struct Free {
        void operator()(T* p) const { std::free(p); }
    };
    std::unique_ptr<T, Free> data_;
    size_t size_ = 0;
};

using ZeroedFloats = ZeroedArray<float>;

} // namespace cflow
