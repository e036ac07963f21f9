#include "src/common/cell_grid.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dfmp2 {
namespace {

constexpr int kCellBits = 20;  // cells a side: 2^20, each index in 21 bits of a key
constexpr std::int64_t kCellsPerSide = std::int64_t(1) << kCellBits;

std::uint64_t cell_key(const std::array<std::int64_t, 3>& cell) {
  return (std::uint64_t(cell[0]) << (2 * (kCellBits + 1))) | (std::uint64_t(cell[1]) << (kCellBits + 1)) |
         std::uint64_t(cell[2]);
}

}  // namespace

CellGrid::CellGrid(const std::vector<Point>& points, double edge) {
  Point lowest{0.0, 0.0, 0.0}, highest{0.0, 0.0, 0.0};
  if (!points.empty()) lowest = highest = points[0];
  for (const Point& p : points)
    for (int c = 0; c < 3; ++c) {
      lowest[c] = std::min(lowest[c], p[c]);
      highest[c] = std::max(highest[c], p[c]);
    }
  double spread = 0.0;
  for (int c = 0; c < 3; ++c) spread = std::max(spread, highest[c] - lowest[c]);
  origin_ = lowest;
  // Past the spread one cell holds every point; a tiny edge would need more cells than keys hold.
  edge_ = std::isfinite(edge) && edge < spread ? std::max(edge, spread / double(kCellsPerSide - 1)) : spread + 1.0;
  std::vector<std::uint64_t> keys(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) keys[i] = cell_key(cell_of(points[i]));
  order_.resize(points.size());
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  keys_.resize(points.size());
  for (std::size_t k = 0; k < order_.size(); ++k) keys_[k] = keys[order_[k]];
}

std::array<std::int64_t, 3> CellGrid::cell_of(const Point& r) const {
  // Clamped, so that a point beyond the grid (or a spread too wide for a double: inf / inf) gets
  // the nearest cell: callers check distances themselves.
  std::array<std::int64_t, 3> cell{};
  for (int c = 0; c < 3; ++c) {
    const double q = std::floor((r[c] - origin_[c]) / edge_);
    cell[c] = q >= 0.0 ? static_cast<std::int64_t>(std::min(q, double(kCellsPerSide - 1))) : 0;
  }
  return cell;
}

std::array<std::size_t, 2> CellGrid::range_of(const std::array<std::int64_t, 3>& cell) const {
  for (std::int64_t c : cell)
    if (c < 0 || c >= kCellsPerSide) return {0, 0};
  const std::uint64_t key = cell_key(cell);
  const auto first = std::lower_bound(keys_.begin(), keys_.end(), key);
  const auto last = std::upper_bound(first, keys_.end(), key);
  return {std::size_t(first - keys_.begin()), std::size_t(last - keys_.begin())};
}

}  // namespace dfmp2
