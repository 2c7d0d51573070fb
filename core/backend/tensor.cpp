#include "core/backend/tensor.h"

#include <algorithm>

#include "core/backend/arena.h"
#include "core/util/error.h"

namespace mirrorlab {

void Shape::assign(const std::int64_t* dims, std::size_t rank) {
    if (rank > static_cast<std::size_t>(kMaxRank)) {
        throw OpError("[shape] rank " + std::to_string(rank) + " is above the supported " + std::to_string(kMaxRank));
    }
    std::copy(dims, dims + rank, dims_.begin());
    rank_ = static_cast<int>(rank);
}

std::int64_t Shape::numel() const {
    std::int64_t count = 1;
    for (auto dim : dims()) {
        // Shapes come from model files: a wrapped product would allocate too little and write past it.
        if (dim < 0 || __builtin_mul_overflow(count, dim, &count)) {
            throw OpError("[shape] " + to_string() + " has more elements than can be counted");
        }
    }
    return count;
}

Shape Shape::with_leading(std::int64_t first) const {
    Shape copy = *this;
    if (copy.rank_ > 0) copy.dims_[0] = first;
    return copy;
}

Shape Shape::prepended(std::int64_t first) const {
    if (rank_ == kMaxRank) throw OpError("[shape] cannot add a dimension to " + to_string());
    Shape result;
    result.dims_[0] = first;
    std::copy(dims_.begin(), dims_.begin() + rank_, result.dims_.begin() + 1);
    result.rank_ = rank_ + 1;
    return result;
}

bool Shape::operator==(const Shape& other) const {
    return rank_ == other.rank_ && std::equal(dims_.begin(), dims_.begin() + rank_, other.dims_.begin());
}

std::string Shape::to_string() const {
    std::string text = "[";
    for (int i = 0; i < rank_; ++i) {
        if (i > 0) text += ", ";
        text += std::to_string(dims_[static_cast<std::size_t>(i)]);
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
