// Synthetic DF-MP2 inputs with a fixed seed: the benchmark shapes, reusable (e.g. to write them to
// HDF5). Portable: uses only mt19937_64 (fully specified by the standard) and its own Box–Muller,
// so every platform generates the same numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dfmp2::bench {

struct ShapeSpec {
  std::string name;
  std::size_t nbasis = 0, nocc = 0, naux = 0;
  std::size_t nvir() const { return nbasis - nocc; }
};

// small (128, 16, 384), medium (512, 64, 1536), large (768, 96, 2304) as (nbasis, nocc, naux).
const std::vector<ShapeSpec>& standard_shapes();
const ShapeSpec& find_shape(const std::string& name);  // throws std::invalid_argument

inline constexpr std::uint64_t kDefaultSeed = 20240611;

struct SyntheticSystem {
  ShapeSpec shape;
  std::vector<double> B;        // row-major [nocc][nvir][naux], B = 0.1 · N(0, 1)
  std::vector<double> eps_occ;  // uniform in [−1.5, −0.5]
  std::vector<double> eps_vir;  // uniform in [0.1, 1.1]
};

SyntheticSystem make_synthetic(const ShapeSpec& shape, std::uint64_t seed = kDefaultSeed);

}  // namespace dfmp2::bench
