#include "src/integrals/centre_derivatives.hpp"

#include <algorithm>
#include <string>

#include <libint2/cgshell_ordering.h>
#include <libint2/config.h>
#include <libint2/libint2_params.h>
#include <libint2/solidharmonics.h>

#include "src/common/errors.hpp"

namespace dfmp2 {
namespace {

std::size_t cartesian_count(int l) { return static_cast<std::size_t>((l + 1) * (l + 2) / 2); }

libint2::Shell cartesian_shell(const libint2::Shell& shell, int l, libint2::svector<double> coefficients) {
  return libint2::Shell(shell.alpha, {{l, false, std::move(coefficients)}}, shell.O, false);
}

// 2α_k c_k: the coefficients of the shell of l + 1.
libint2::svector<double> twice_alpha_times_coefficients(const libint2::Shell& shell) {
  libint2::svector<double> c = shell.contr[0].coeff;
  for (std::size_t k = 0; k < c.size(); ++k) c[k] *= 2.0 * shell.alpha[k];
  return c;
}

}  // namespace

int max_differentiable_l() { return std::min(LIBINT2_MAX_AM_default - 1, LIBINT2_MAX_AM_eri1); }

void require_max_l(const libint2::BasisSet& basis, int max_l, const char* what) {
  if (basis.max_l() > max_l)
    throw InputError(std::string(what) + " needs shells of l ≤ " + std::to_string(max_l) + " (libint2's limit), not " +
                     std::to_string(basis.max_l()));
}

CentreDerivative::CentreDerivative(const libint2::Shell& shell)
    : raised(cartesian_shell(shell, shell.contr[0].l + 1, twice_alpha_times_coefficients(shell))) {
  if (shell.contr[0].l > 0) lowered = cartesian_shell(shell, shell.contr[0].l - 1, shell.contr[0].coeff);
}

void CentreDifferentiation::start(const libint2::Shell& a, std::size_t outer, std::size_t inner) {
  a_ = &a;
  outer_ = outer;
  inner_ = inner;
  cartesian_.assign(3 * outer * cartesian_count(a.contr[0].l) * inner, 0.0);
}

void CentreDifferentiation::add(const double* values, int step) {
  if (values == nullptr) return;  // screened: all zero
  const int l = a_->contr[0].l;
  const std::size_t ncart = cartesian_count(l), nshifted = cartesian_count(l + step);
  for (int i = l, f = 0; i >= 0; --i)
    for (int j = l - i; j >= 0; --j, ++f) {
      const int exponents[3] = {i, j, l - i - j};
      for (int k = 0; k < 3; ++k) {
        int shifted[3] = {exponents[0], exponents[1], exponents[2]};
        shifted[k] += step;
        if (shifted[k] < 0) continue;
        const double factor = step > 0 ? 1.0 : -exponents[k];
        const auto g = static_cast<std::size_t>(libint2::INT_CARTINDEX(static_cast<unsigned>(l + step), shifted[0], shifted[1]));
        for (std::size_t o = 0; o < outer_; ++o) {
          const double* in = values + (o * nshifted + g) * inner_;
          double* out = cartesian_.data() + ((k * outer_ + o) * ncart + static_cast<std::size_t>(f)) * inner_;
          for (std::size_t n = 0; n < inner_; ++n) out[n] += factor * in[n];
        }
      }
    }
}

const std::vector<double>& CentreDifferentiation::finish() {
  if (!a_->contr[0].pure) return cartesian_;
  const auto l = static_cast<std::size_t>(a_->contr[0].l);
  const std::size_t ncart = cartesian_count(a_->contr[0].l), npure = 2 * l + 1;
  spherical_.resize(3 * outer_ * npure * inner_);
  for (std::size_t k = 0; k < 3; ++k)
    libint2::solidharmonics::transform_inner(outer_, l, inner_, cartesian_.data() + k * outer_ * ncart * inner_,
                                             spherical_.data() + k * outer_ * npure * inner_);
  return spherical_;
}

}  // namespace dfmp2
