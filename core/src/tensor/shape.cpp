#include "attnlab/shape.h"

#include "attnlab/error.h"

namespace attnlab {

Shape::Shape(std::initializer_list<std::int64_t> dims) : Shape(std::vector<std::int64_t>(dims)) {}

Shape::Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {
  for (auto d : dims_) ATTNLAB_CHECK(d >= -1, "negative extent in shape {}", str());
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (auto d : dims_) n *= d;
  return n;
}

int Shape::normalize_axis(int axis) const {
  const int r = rank();
  const int a = axis < 0 ? axis + r : axis;
  ATTNLAB_CHECK(a >= 0 && a < r, "axis {} is out of range for shape {}", axis, str());
  return a;
}

std::int64_t Shape::outer(int axis) const {
  std::int64_t n = 1;
  for (int i = 0; i < axis; ++i) n *= dims_[static_cast<std::size_t>(i)];
  return n;
}

std::int64_t Shape::inner(int axis) const {
  std::int64_t n = 1;
  for (int i = axis; i < rank(); ++i) n *= dims_[static_cast<std::size_t>(i)];
  return n;
}

bool Shape::ends_with(const Shape& suffix) const {
  if (suffix.rank() > rank()) return false;
  return std::equal(suffix.dims_.rbegin(), suffix.dims_.rend(), dims_.rbegin());
}

std::string Shape::str() const { return fmt::format("[{}]", fmt::join(dims_, ", ")); }

}  // namespace attnlab
