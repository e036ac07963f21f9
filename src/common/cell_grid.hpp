// Points binned in cubic cells of one edge length (a cell list): the points within that distance
// of a point lie in the 27 cells around its own, so finding near pairs costs the number of
// points times their neighbours, not the number of points squared.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dfmp2 {

class CellGrid {
 public:
  using Point = std::array<double, 3>;
  // Points must be finite. An edge too small for the points' spread is widened (at most 2^20
  // cells a side); an infinite one puts every point in one cell.
  CellGrid(const std::vector<Point>& points, double edge);

  // near(i) for every point i in the 27 cells around r's: all those within `edge` of r, and some
  // further.
  template <typename Near>
  void for_each_near(const Point& r, Near&& near) const {
    const std::array<std::int64_t, 3> cell = cell_of(r);
    for (std::int64_t dx = -1; dx <= 1; ++dx)
      for (std::int64_t dy = -1; dy <= 1; ++dy)
        for (std::int64_t dz = -1; dz <= 1; ++dz) {
          const auto [first, last] = range_of({cell[0] + dx, cell[1] + dy, cell[2] + dz});
          for (std::size_t k = first; k < last; ++k) near(order_[k]);
        }
  }

 private:
  std::array<std::int64_t, 3> cell_of(const Point& r) const;
  // Where the points of a cell lie in order_ (empty for a cell outside the grid).
  std::array<std::size_t, 2> range_of(const std::array<std::int64_t, 3>& cell) const;

  Point origin_{};
  double edge_ = 1.0;
  std::vector<std::uint64_t> keys_;  // the cells' keys, ascending
  std::vector<std::size_t> order_;   // the points, in their cells' order
};

}  // namespace dfmp2
