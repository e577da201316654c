#pragma once
// Tensor shapes: a small list of extents, row-major (the last axis is contiguous). An extent of
// -1 is accepted only as a reshape target ("infer this one"); tensors are never created with it.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace attnlab {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::vector<std::int64_t> dims);

  int rank() const { return static_cast<int>(dims_.size()); }
  std::int64_t numel() const;
  // Extent of axis `axis`; negative counts from the end. Throws for an axis out of range.
  std::int64_t operator[](int axis) const { return dims_[static_cast<std::size_t>(normalize_axis(axis))]; }
  std::int64_t& operator[](int axis) { return dims_[static_cast<std::size_t>(normalize_axis(axis))]; }
  // Maps a possibly negative axis into [0, rank); throws an Error naming the axis and the shape.
  int normalize_axis(int axis) const;
  const std::vector<std::int64_t>& dims() const { return dims_; }
  // Product of the extents before `axis` (rows) and from `axis` on (inner size).
  std::int64_t outer(int axis) const;
  std::int64_t inner(int axis) const;
  bool ends_with(const Shape& suffix) const;
  std::string str() const;  // "[2, 3, 4]"
  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  std::vector<std::int64_t> dims_;
};

}  // namespace attnlab
