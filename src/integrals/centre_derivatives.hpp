// Integrals differentiated with respect to the centre of one of their shells, contracted with a
// density, from libint2's undifferentiated integrals over shells of l ± 1. Debian's libint2 2.7.2
// has no one-body derivative integrals, and its three-centre first-derivative engine (BraKet::xs_xx, deriv 1)
// picks the wrong generated function for every shell triplet above (s|ss): its index into the
// build functions takes the ket dimension of the undifferentiated table (8, not 6), because the
// Boost.PP test for centre-dependent limits fails inside its macro. So both come from here.
//
// For a primitive on A, ∂/∂A_x of x_A^i y_A^j z_A^m e^(−α r_A²) is
// 2α x_A^(i+1) y_A^j z_A^m e^(…) − i x_A^(i−1) y_A^j z_A^m e^(…) (y, z alike): the shell's functions
// differentiate into those of two Cartesian shells on A with its exponents, one of l + 1 with
// coefficients 2α_k c_k, one of l − 1 with c_k.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>
#include <libint2/engine.h>
#include <libint2/shell.h>

namespace dfmp2 {

// The highest orbital l whose derivatives dfmp2 computes: the shells of l + 1 must fit libint2's
// one-body and three-centre integrals (l ≤ 5), and its four-centre first derivatives go to l ≤ 4.
int max_differentiable_l();
// Throws InputError when `basis` has a shell above max_l, naming `what` needs it.
void require_max_l(const libint2::BasisSet& basis, int max_l, const char* what);

// The shells of l ± 1 a shell's centre derivative is made of. libint2's coefficients c_k already
// multiply normalisation-free primitives, so the shells keep them as they are.
struct CentreDerivative {
  explicit CentreDerivative(const libint2::Shell& shell);
  libint2::Shell raised;                  // l + 1, coefficients 2α_k c_k
  std::optional<libint2::Shell> lowered;  // l − 1, coefficients c_k; none for an s shell
};

// Σ_{o,f,i} w[o][f][i] ∂/∂A_k v[o][f][i] (k = x, y, z) for a block of integrals v in which shell a
// (on A, with derivative da) stands between `outer` and `inner` other functions, without making
// the derivatives: w is taken to a's Cartesian functions once (the transpose of the solid-harmonic
// transform, when a is spherical) and dotted with the integrals over da's shells, each
// Cartesian function's derivative being two of their functions.
// A bound on the derivatives of the integrals (X|μν) over any X, μ of shell a (derivative da), ν
// of b: |∂(X|μν)/∂A_k| ≤ sqrt((X|X)) times it, by Cauchy–Schwarz in the Coulomb metric with the
// Coulomb norms ‖φ φ'‖ = sqrt((φφ'|φφ')) of the l ± 1 shells' products: t_l (max ‖φ⁺φ_ν‖ + l max
// ‖φ⁻φ_ν‖), t_l the largest Σ_c |T_sc| of a's solid-harmonic transform (1 if Cartesian).
// `engine`: four-centre Coulomb, l up to a's + 1, precision 0.
double derivative_norm_bound(libint2::Engine& engine, const libint2::Shell& a, const CentreDerivative& da,
                             const libint2::Shell& b);

class CentreContraction {
 public:
  // w: row-major [outer][a's functions][inner]; values(shifted) gives the block with a replaced by
  // `shifted` (one of da's shells), row-major [outer][shifted's functions][inner], or nullptr
  // when all are zero.
  template <typename Values>
  Eigen::Vector3d operator()(const libint2::Shell& a, const CentreDerivative& da, std::size_t outer,
                             std::size_t inner, const double* w, Values&& values) {
    start(a, outer, inner, w);
    Eigen::Vector3d f = Eigen::Vector3d::Zero();
    add(values(da.raised), +1, f);
    if (da.lowered) add(values(*da.lowered), -1, f);
    return f;
  }

 private:
  void start(const libint2::Shell& a, std::size_t outer, std::size_t inner, const double* w);
  // Adds the shifted shell's share to f: its function φ⁺_(i+1)jm to x's (step +1), −i φ⁻_(i−1)jm
  // (step −1; y, z alike).
  void add(const double* values, int step, Eigen::Vector3d& f) const;

  int l_ = 0;
  std::size_t outer_ = 0, inner_ = 0;
  const double* cartesian_weights_ = nullptr;  // [outer][a's Cartesian functions][inner]
  std::vector<double> transformed_;            // its storage when a is spherical
};

}  // namespace dfmp2
