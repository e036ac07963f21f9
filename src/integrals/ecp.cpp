#include "src/integrals/ecp.hpp"

#include <algorithm>
#include <array>
#include <iostream>
#include <limits>
#include <mutex>
#include <streambuf>
#include <vector>

#include <libecpint/ecpint.hpp>
#include <libint2/solidharmonics.h>
#include <omp.h>

#include "src/common/errors.hpp"

namespace dfmp2 {
namespace {

struct PlacedPotential {
  libecpint::ECP U;
  double min_exponent = std::numeric_limits<double>::infinity();
};

std::vector<PlacedPotential> place_potentials(const BasisSetData& basis, const Molecule& mol) {
  std::vector<PlacedPotential> potentials;
  for (const Atom& atom : mol.atoms) {
    if (atom.ecp_electrons == 0) continue;
    PlacedPotential p{libecpint::ECP(atom.r.data())};
    for (const EcpTerm& term : basis.ecp_by_Z.at(atom.Z).terms) {
      p.U.addPrimitive(term.power, term.l, term.exponent, term.coefficient, false);
      p.min_exponent = std::min(p.min_exponent, term.exponent);
    }
    p.U.sort();
    potentials.push_back(std::move(p));
  }
  return potentials;
}

// libint2's contraction as libecpint takes it: coefficients of normalised primitives, Cartesian
// components in the same (xx, xy, xz, yy, …) order.
libecpint::GaussianShell ecpint_shell(const libint2::Shell& shell) {
  libecpint::GaussianShell g(shell.O, shell.contr[0].l);
  for (std::size_t p = 0; p < shell.alpha.size(); ++p) g.addPrim(shell.alpha[p], shell.contr[0].coeff[p]);
  return g;
}

// Cauchy–Schwarz over |U|: ∫ g_a² |U| decays as exp(−2αζ/(2α+ζ) R²); its square root, per shell.
double decay(const libint2::Shell& shell, const PlacedPotential& p) {
  const double alpha = *std::min_element(shell.alpha.begin(), shell.alpha.end()), zeta = p.min_exponent;
  const double* c = p.U.center();
  const double r2 = (shell.O[0] - c[0]) * (shell.O[0] - c[0]) + (shell.O[1] - c[1]) * (shell.O[1] - c[1]) +
                    (shell.O[2] - c[2]) * (shell.O[2] - c[2]);
  return alpha * zeta / (2.0 * alpha + zeta) * r2;
}

// One shell pair's block (rows s1, columns s2) summed over the potentials, in the shells' own
// (spherical or Cartesian) functions; counts what was computed and screened.
std::vector<double> shell_pair_block(const libecpint::ECPIntegral& engine, const std::vector<PlacedPotential>& potentials,
                                     const libint2::Shell& s1, const libint2::Shell& s2,
                                     const libecpint::GaussianShell& g1, const libecpint::GaussianShell& g2,
                                     double screening, EcpIntegrals& counts) {
  const std::size_t n1 = s1.cartesian_size(), n2 = s2.cartesian_size();
  std::vector<double> cartesian(n1 * n2, 0.0);
  libecpint::TwoIndex<double> values;
  for (const PlacedPotential& p : potentials) {
    if (decay(s1, p) + decay(s2, p) > screening) {
      ++counts.screened;
      continue;
    }
    ++counts.computed;
    values.assign(static_cast<int>(n1), static_cast<int>(n2), 0.0);
    engine.compute_shell_pair(p.U, g1, g2, values);
    for (std::size_t i = 0; i < n1 * n2; ++i) cartesian[i] += values.data[i];
  }
  if (!s1.contr[0].pure && !s2.contr[0].pure) return cartesian;
  std::vector<double> block(s1.size() * s2.size());
  libint2::solidharmonics::tform(s1.contr[0], s2.contr[0], cartesian.data(), block.data());
  return block;
}

// libecpint reports a radial quadrature that stops short ("Failed to converge") on std::cout,
// where dfmp2's report and QCSchema results go: while it runs, std::cout counts and discards.
class CoutSilencer {
 public:
  CoutSilencer() : saved_(std::cout.rdbuf(&sink_)) {}
  ~CoutSilencer() { std::cout.rdbuf(saved_); }
  CoutSilencer(const CoutSilencer&) = delete;
  CoutSilencer& operator=(const CoutSilencer&) = delete;
  bool silenced_something() const { return sink_.written > 0; }

 private:
  struct CountingSink : std::streambuf {
    std::mutex mutex;
    std::size_t written = 0;
    int overflow(int c) override {
      const std::lock_guard lock(mutex);
      ++written;
      return c;
    }
    std::streamsize xsputn(const char*, std::streamsize n) override {
      const std::lock_guard lock(mutex);
      written += static_cast<std::size_t>(n);
      return n;
    }
  };
  CountingSink sink_;
  std::streambuf* saved_;
};

int max_potential_l(const std::vector<PlacedPotential>& potentials) {
  int l = 0;
  for (const PlacedPotential& p : potentials) l = std::max(l, p.U.getL());
  return l;
}

}  // namespace

bool has_ecp(const Molecule& mol) {
  return std::any_of(mol.atoms.begin(), mol.atoms.end(), [](const Atom& atom) { return atom.ecp_electrons > 0; });
}

EcpIntegrals ecp_integrals(const libint2::BasisSet& obs, const BasisSetData& basis, const Molecule& mol,
                           double screening) {
  EcpIntegrals result{Eigen::MatrixXd::Zero(obs.nbf(), obs.nbf())};
  const std::vector<PlacedPotential> potentials = place_potentials(basis, mol);
  if (potentials.empty()) return result;
  if (obs.max_l() > LIBECPINT_MAX_L)
    throw InputError("the orbital basis has l = " + std::to_string(obs.max_l()) + " shells; libecpint's potential "
                     "integrals go to l = " + std::to_string(LIBECPINT_MAX_L));
  std::vector<libecpint::GaussianShell> shells;
  for (const libint2::Shell& shell : obs) shells.push_back(ecpint_shell(shell));
  const auto shell2bf = obs.shell2bf();
  const int max_l = obs.max_l(), max_potential = max_potential_l(potentials);
  const CoutSilencer silencer;
#pragma omp parallel
  {
    const libecpint::ECPIntegral engine(max_l, max_potential);
    EcpIntegrals counts;
#pragma omp for schedule(dynamic)
    for (std::size_t s1 = 0; s1 < obs.size(); ++s1)
      for (std::size_t s2 = 0; s2 <= s1; ++s2) {
        const std::vector<double> block =
            shell_pair_block(engine, potentials, obs[s1], obs[s2], shells[s1], shells[s2], screening, counts);
        const std::size_t n1 = obs[s1].size(), n2 = obs[s2].size();
        for (std::size_t f1 = 0; f1 < n1; ++f1)
          for (std::size_t f2 = 0; f2 < n2; ++f2)
            result.U(shell2bf[s1] + f1, shell2bf[s2] + f2) = result.U(shell2bf[s2] + f2, shell2bf[s1] + f1) =
                block[f1 * n2 + f2];
      }
#pragma omp critical
    {
      result.computed += counts.computed;
      result.screened += counts.screened;
    }
  }
  result.quadrature_warned = silencer.silenced_something();
  return result;
}

}  // namespace dfmp2
