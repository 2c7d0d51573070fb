#pragma once
// Tensors are plain row-major buffers on one logical device. `Tensor` owns an allocation in the
// device's arena; `TensorView` is the non-owning (pointer, shape) pair that ops take, so a
// buffer sized for the largest shard can be viewed with a smaller batch without copying.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mirrorlab {

class MemoryArena;

enum class DType { Invalid = 0, F32, I32 };

inline std::int64_t dtype_size(DType dtype) { return dtype == DType::Invalid ? 0 : 4; }

// Dimensions live inline (no heap): ops slice and reshape views of every buffer in every step,
// and a step must not allocate.
class Shape {
public:
    static constexpr int kMaxRank = 8;

    Shape() = default;
    Shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.size()); }
    explicit Shape(std::span<const std::int64_t> dims) { assign(dims.data(), dims.size()); }

    int rank() const { return rank_; }
    std::int64_t operator[](int axis) const { return dims_[static_cast<std::size_t>(axis)]; }
    std::int64_t& operator[](int axis) { return dims_[static_cast<std::size_t>(axis)]; }
    std::int64_t numel() const;
    std::span<const std::int64_t> dims() const { return {dims_.data(), static_cast<std::size_t>(rank_)}; }
    Shape with_leading(std::int64_t first) const;  // same shape, another batch size
    Shape prepended(std::int64_t first) const;     // [first, dims...]
    bool operator==(const Shape& other) const;
    std::string to_string() const;  // "[32, 300, 7]"

private:
    void assign(const std::int64_t* dims, std::size_t rank);  // throws OpError above kMaxRank

    std::array<std::int64_t, kMaxRank> dims_{};
    int rank_ = 0;
};

struct TensorView {
    void* data = nullptr;
    Shape shape;
    DType dtype = DType::Invalid;

    std::int64_t numel() const { return shape.numel(); }
    std::int64_t bytes() const { return numel() * dtype_size(dtype); }
    float* f32() const { return static_cast<float*>(data); }
    std::int32_t* i32() const { return static_cast<std::int32_t*>(data); }
    TensorView with_leading(std::int64_t first) const { return {data, shape.with_leading(first), dtype}; }
    TensorView reshaped(Shape new_shape) const;  // same element count
    TensorView slice(std::int64_t offset_elements, Shape new_shape) const;
    explicit operator bool() const { return data != nullptr; }
};

class Tensor {
public:
    Tensor() = default;
    Tensor(MemoryArena& arena, DType dtype, Shape shape, std::string_view what);
    ~Tensor();
    Tensor(Tensor&& other) noexcept;
    Tensor& operator=(Tensor&& other) noexcept;
    Tensor(const Tensor&) = delete;
    Tensor& operator=(const Tensor&) = delete;

    TensorView view() const { return {data_, shape_, dtype_}; }
    operator TensorView() const { return view(); }
    const Shape& shape() const { return shape_; }
    DType dtype() const { return dtype_; }
    std::int64_t numel() const { return shape_.numel(); }
    std::int64_t bytes() const { return numel() * dtype_size(dtype_); }
    float* f32() const { return static_cast<float*>(data_); }
    std::int32_t* i32() const { return static_cast<std::int32_t*>(data_); }
    bool empty() const { return data_ == nullptr; }

private:
    MemoryArena* arena_ = nullptr;
    void* data_ = nullptr;
    Shape shape_;
    DType dtype_ = DType::Invalid;
};

}  // namespace mirrorlab
