#include "core/backend/tensor.h"

#include "core/device/arena.h"
#include "core/util/error.h"

namespace mirrorlab {

std::int64_t Shape::numel() const {
    std::int64_t count = 1;
    for (auto dim : dims_) count *= dim;
    return count;
}

Shape Shape::with_leading(std::int64_t first) const {
    Shape copy = *this;
    if (!copy.dims_.empty()) copy.dims_[0] = first;
    return copy;
}

std::string Shape::to_string() const {
    std::string text = "[";
    for (std::size_t i = 0; i < dims_.size(); ++i) {
        if (i > 0) text += ", ";
        text += std::to_string(dims_[i]);
    }
    return text + "]";
}

TensorView TensorView::reshaped(Shape new_shape) const {
    if (new_shape.numel() != numel()) {
        throw OpError("[reshape] cannot view " + shape.to_string() + " as " + new_shape.to_string());
    }
    return {data, std::move(new_shape), dtype};
}

TensorView TensorView::slice(std::int64_t offset_elements, Shape new_shape) const {
    if (offset_elements < 0 || offset_elements + new_shape.numel() > numel()) {
        throw OpError("[slice] " + new_shape.to_string() + " at offset " +
                      std::to_string(offset_elements) + " does not fit in " + shape.to_string());
    }
    auto* base = static_cast<char*>(data) + offset_elements * dtype_size(dtype);
    return {base, std::move(new_shape), dtype};
}

Tensor::Tensor(MemoryArena& arena, DType dtype, Shape shape, std::string_view what)
    : arena_(&arena), shape_(std::move(shape)), dtype_(dtype) {
    data_ = arena.allocate(shape_.numel() * dtype_size(dtype_), what);
}

Tensor::~Tensor() {
    if (arena_ != nullptr) arena_->deallocate(data_);
}

Tensor::Tensor(Tensor&& other) noexcept
    : arena_(other.arena_), data_(other.data_), shape_(std::move(other.shape_)), dtype_(other.dtype_) {
    other.arena_ = nullptr;
    other.data_ = nullptr;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
    if (this != &other) {
        if (arena_ != nullptr) arena_->deallocate(data_);
        arena_ = other.arena_;
        data_ = other.data_;
        shape_ = std::move(other.shape_);
        dtype_ = other.dtype_;
        other.arena_ = nullptr;
        other.data_ = nullptr;
    }
    return *this;
}

}  // namespace mirrorlab
