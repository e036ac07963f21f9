#include "bench/synthetic_shapes.hpp"

#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>

namespace dfmp2::bench {

const std::vector<ShapeSpec>& standard_shapes() {
  static const std::vector<ShapeSpec> shapes{
      {"small", 128, 16, 384}, {"medium", 512, 64, 1536}, {"large", 768, 96, 2304}};
  return shapes;
}

const ShapeSpec& find_shape(const std::string& name) {
  for (const auto& s : standard_shapes())
    if (s.name == name) return s;
  throw std::invalid_argument("unknown synthetic shape '" + name + "' (expected small, medium or large)");
}

namespace {
double uniform01(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }  // [0, 1)
}  // namespace

SyntheticSystem make_synthetic(const ShapeSpec& shape, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  SyntheticSystem s{shape, std::vector<double>(shape.nocc * shape.nvir() * shape.naux), {}, {}};
  for (std::size_t n = 0; n < s.B.size(); n += 2) {  // Box–Muller: two normals per two uniforms
    const double r = std::sqrt(-2.0 * std::log1p(-uniform01(rng)));
    const double phi = 2.0 * std::numbers::pi * uniform01(rng);
    s.B[n] = 0.1 * r * std::cos(phi);
    if (n + 1 < s.B.size()) s.B[n + 1] = 0.1 * r * std::sin(phi);
  }
  for (std::size_t i = 0; i < shape.nocc; ++i) s.eps_occ.push_back(-1.5 + uniform01(rng));
  for (std::size_t a = 0; a < shape.nvir(); ++a) s.eps_vir.push_back(0.1 + uniform01(rng));
  return s;
}

}  // namespace dfmp2::bench
