#include "src/integrals/ecp_shell_pair.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <libecpint/mathutil.hpp>
#include <libecpint/qgen.hpp>

namespace dfmp2 {
namespace {

// libecpint's defaults (ECPIntegral's constructor): radial tolerance and its two grids.
constexpr double kRadialTolerance = 1e-15;
constexpr int kSmallGrid = 256, kLargeGrid = 1024;
constexpr double kOnCentre = 1e-6;  // bohr: libecpint's test for a shell on the potential's centre

int cartesian_count(int l) { return (l + 1) * (l + 2) / 2; }

struct Offset {
  double r[3] = {0, 0, 0}, length = 0;
};

Offset from_potential(const libecpint::GaussianShell& shell, const libecpint::ECP& U) {
  Offset o;
  for (int k = 0; k < 3; ++k) o.r[k] = shell.center()[k] - U.center()[k];
  o.length = std::sqrt(o.r[0] * o.r[0] + o.r[1] * o.r[1] + o.r[2] * o.r[2]);
  return o;
}

// The pairs whose libecpint function is unrolled, and so inexact.
bool unrolled_in_libecpint(int LA, int LB, const Offset& A, const Offset& B) {
  return LA <= LIBECPINT_MAX_UNROL && LB <= LIBECPINT_MAX_UNROL && A.length > kOnCentre && B.length > kOnCentre;
}

// The radial integrals (N, l1, l2) the rolled-up sum reads for channel lam: N ≤ LA + LB,
// l1 ≤ lam + LA, l2 ≤ lam + LB, N + l1 + l2 even (a few more than its nonzero angular factors use).
std::vector<libecpint::Triple> radial_triples(int lam, int LA, int LB) {
  std::vector<libecpint::Triple> triples;
  for (int N = 0; N <= LA + LB; ++N)
    for (int l1 = 0; l1 <= lam + LA; ++l1)
      for (int l2 = (l1 + N) % 2; l2 <= lam + LB; l2 += 2) triples.emplace_back(N, l1, l2);
  return triples;
}

libecpint::GaussianShell with_exponents_in_coefficients(const libecpint::GaussianShell& shell) {
  libecpint::GaussianShell scaled = shell.copy();
  for (int p = 0; p < scaled.nprimitive(); ++p) scaled.coeffs[static_cast<std::size_t>(p)] *= scaled.exps[static_cast<std::size_t>(p)];
  return scaled;
}

// Index of the Cartesian component x^k y^l z^m in a shell (libecpint's order: x, then y, falling).
int component(int l, int m) { return (l + m) * (l + m + 1) / 2 + m; }

}  // namespace

EcpPotential ecp_potential(const libecpint::ECP& whole) {
  EcpPotential U{whole, libecpint::ECP(whole.center())};
  for (const libecpint::GaussianECP& g : whole.gaussians)
    if (g.l == whole.getL()) U.local.addPrimitive(g.n + 2, g.l, g.a, g.d, false);  // GaussianECP keeps n − 2
  U.local.sort();
  return U;
}

EcpShellPairs::EcpShellPairs(int max_l_basis, int max_l_potential, int derivative_order)
    : library_(max_l_basis, max_l_potential, derivative_order) {
  // As ECPIntegral sizes its own (the shifts of a derivative raise l by its order).
  radial_.init(2 * (max_l_basis + derivative_order) + max_l_potential, kRadialTolerance, kSmallGrid, kLargeGrid);
  angular_.init(max_l_basis + derivative_order, max_l_potential);
  angular_.compute();
}

libecpint::TwoIndex<double> EcpShellPairs::integrals(const EcpPotential& U, const libecpint::GaussianShell& A,
                                                     const libecpint::GaussianShell& B, int shift_A, int shift_B) const {
  const int LA = A.am() + shift_A, LB = B.am() + shift_B;
  libecpint::TwoIndex<double> values;
  if (!unrolled_in_libecpint(LA, LB, from_potential(A, U.whole), from_potential(B, U.whole))) {
    library_.compute_shell_pair(U.whole, A, B, values, shift_A, shift_B);
    return values;
  }
  library_.compute_shell_pair(U.local, A, B, values, shift_A, shift_B);  // the local channel: exact in libecpint
  for (int lam = 0; lam < U.whole.getL(); ++lam) add_semilocal(U.whole, lam, A, B, LA, LB, values);
  return values;
}

// Channel lam of a pair off the potential's centre, as libecpint's rolled-up functions form it:
// the radial integrals (those with l1 > l2 with the shells swapped, as its recursion needs
// l1 ≤ l2), then the angular sum over the binomial expansion of each shell about the centre.
void EcpShellPairs::add_semilocal(const libecpint::ECP& U, int lam, const libecpint::GaussianShell& A,
                                  const libecpint::GaussianShell& B, int LA, int LB,
                                  libecpint::TwoIndex<double>& values) const {
  const Offset a = from_potential(A, U), b = from_potential(B, U);
  std::vector<libecpint::Triple> in_order, swapped;
  int nbase = 0;
  for (const auto& [N, l1, l2] : radial_triples(lam, LA, LB)) {
    (l1 <= l2 ? in_order : swapped).emplace_back(N, std::min(l1, l2), std::max(l1, l2));
    nbase = std::max(nbase, N + std::max(l1, l2) - 1);  // base integrals its recursion reads
  }
  libecpint::ThreeIndex<double> radials(LA + LB + 1, lam + LA + 1, lam + LB + 1);
  libecpint::ThreeIndex<double> radials_BA(LA + LB + 1, lam + LB + 1, lam + LA + 1);
  radial_.type2(in_order, nbase, lam, U, A, B, a.length, b.length, radials);
  if (!swapped.empty()) radial_.type2(swapped, nbase, lam, U, B, A, b.length, a.length, radials_BA);
  for (const auto& [N, l2, l1] : swapped) radials(N, l1, l2) = radials_BA(N, l2, l1);

  libecpint::FiveIndex<double> CA(1, cartesian_count(LA), LA + 1, LA + 1, LA + 1);
  libecpint::FiveIndex<double> CB(1, cartesian_count(LB), LB + 1, LB + 1, LB + 1);
  library_.makeC(CA, LA, a.r);
  library_.makeC(CB, LB, b.r);
  const libecpint::TwoIndex<double> SA = libecpint::realSphericalHarmonics(lam + LA, a.r[2] / a.length,
                                                                          std::atan2(a.r[1], a.r[0]));
  const libecpint::TwoIndex<double> SB = libecpint::realSphericalHarmonics(lam + LB, b.r[2] / b.length,
                                                                          std::atan2(b.r[1], b.r[0]));
  libecpint::ThreeIndex<double> by_mu(cartesian_count(LA), cartesian_count(LB), 2 * lam + 1);
  libecpint::qgen::rolled_up(lam, LA, LB, radials, CA, CB, SA, SB, angular_, by_mu);
  for (int i = 0; i < cartesian_count(LA); ++i)
    for (int j = 0; j < cartesian_count(LB); ++j)
      for (int mu = 0; mu <= 2 * lam; ++mu) values(i, j) += by_mu(i, j, mu);
}

// d⟨A|U|B⟩/dA = ⟨∂A|U|B⟩, ∂/∂A_x x^k… e^{−αr²} = 2α x^{k+1}… − k x^{k−1}…: the pair with A's l
// raised (coefficients times α) and lowered.
std::array<libecpint::TwoIndex<double>, 3> EcpShellPairs::centre_derivative(const EcpPotential& U,
                                                                             const libecpint::GaussianShell& A,
                                                                             const libecpint::GaussianShell& B) const {
  const int LA = A.am(), nB = cartesian_count(B.am());
  const libecpint::TwoIndex<double> up = integrals(U, with_exponents_in_coefficients(A), B, 1, 0);
  const libecpint::TwoIndex<double> down = LA > 0 ? integrals(U, A, B, -1, 0) : libecpint::TwoIndex<double>();
  std::array<libecpint::TwoIndex<double>, 3> d;
  for (auto& block : d) block.assign(cartesian_count(LA), nB, 0.0);
  int i = 0;
  for (int k = LA; k >= 0; --k)
    for (int l = LA - k; l >= 0; --l, ++i) {
      const int m = LA - k - l;
      const std::array<int, 3> power = {k, l, m};
      const std::array<int, 3> raised = {component(l, m), component(l + 1, m), component(l, m + 1)};
      const std::array<int, 3> lowered = {k > 0 ? component(l, m) : -1, l > 0 ? component(l - 1, m) : -1,
                                          m > 0 ? component(l, m - 1) : -1};
      for (int x = 0; x < 3; ++x)
        for (int j = 0; j < nB; ++j)
          d[x](i, j) = 2.0 * up(raised[x], j) - (lowered[x] >= 0 ? power[x] * down(lowered[x], j) : 0.0);
    }
  return d;
}

// A shell on the potential's centre moves with it: its own derivative is left to translational
// invariance (the potential's derivative is minus the shells'), so only off-centre shells are
// differentiated, and the blocks of one atom add up to the same sum.
std::array<libecpint::TwoIndex<double>, 9> EcpShellPairs::derivatives(const EcpPotential& U,
                                                                      const libecpint::GaussianShell& A,
                                                                      const libecpint::GaussianShell& B) const {
  const int nA = cartesian_count(A.am()), nB = cartesian_count(B.am());
  std::array<libecpint::TwoIndex<double>, 9> d;
  for (auto& block : d) block.assign(nA, nB, 0.0);
  if (from_potential(A, U.whole).length > kOnCentre) {
    const auto dA = centre_derivative(U, A, B);
    for (int x = 0; x < 3; ++x) d[static_cast<std::size_t>(x)] = dA[static_cast<std::size_t>(x)];
  }
  if (from_potential(B, U.whole).length > kOnCentre) {
    const auto dB = centre_derivative(U, B, A);
    for (int x = 0; x < 3; ++x) d[static_cast<std::size_t>(3 + x)] = dB[static_cast<std::size_t>(x)].transpose();
  }
  for (int x = 0; x < 3; ++x)
    for (std::size_t e = 0; e < d[0].data.size(); ++e)
      d[static_cast<std::size_t>(6 + x)].data[e] =
          -(d[static_cast<std::size_t>(x)].data[e] + d[static_cast<std::size_t>(3 + x)].data[e]);
  return d;
}

}  // namespace dfmp2
