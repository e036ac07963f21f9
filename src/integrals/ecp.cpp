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
#include "src/integrals/ecp_shell_pair.hpp"

namespace dfmp2 {
namespace {

struct PlacedPotential {
  EcpPotential U;
  std::size_t atom = 0;
  double min_exponent = std::numeric_limits<double>::infinity();
};

std::vector<PlacedPotential> place_potentials(const BasisSetData& basis, const Molecule& mol) {
  std::vector<PlacedPotential> potentials;
  for (std::size_t a = 0; a < mol.atoms.size(); ++a) {
    const Atom& atom = mol.atoms[a];
    if (atom.ecp_electrons == 0) continue;
    libecpint::ECP U(atom.r.data());
    double min_exponent = std::numeric_limits<double>::infinity();
    for (const EcpTerm& term : basis.ecp_by_Z.at(atom.Z).terms) {
      U.addPrimitive(term.power, term.l, term.exponent, term.coefficient, false);
      min_exponent = std::min(min_exponent, term.exponent);
    }
    U.sort();
    potentials.push_back({ecp_potential(U), a, min_exponent});
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
  const double* c = p.U.whole.center();
  const double r2 = (shell.O[0] - c[0]) * (shell.O[0] - c[0]) + (shell.O[1] - c[1]) * (shell.O[1] - c[1]) +
                    (shell.O[2] - c[2]) * (shell.O[2] - c[2]);
  return alpha * zeta / (2.0 * alpha + zeta) * r2;
}

// A Cartesian block (rows s1, columns s2, as libecpint returns it) in the shells' own functions.
std::vector<double> in_shell_functions(const libint2::Shell& s1, const libint2::Shell& s2, std::vector<double> cartesian) {
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

// What a pass over the shell pairs (s1 ≥ s2) and potentials needs and counts.
struct PotentialPass {
  const libint2::BasisSet& obs;
  std::vector<PlacedPotential> potentials;
  std::vector<libecpint::GaussianShell> shells;
  std::size_t natom = 0;
  int max_l = 0, max_potential_l = 0;
  double screening = kEcpScreening;
  int rank = 0, ranks = 1;  // this rank visits the rows s1 ≡ rank (mod ranks)
  std::size_t computed = 0, screened = 0;
  bool quadrature_warned = false;

  PotentialPass(const libint2::BasisSet& basis_set, const BasisSetData& basis, const Molecule& mol, double bound,
                const Communicator& comm)
      : obs(basis_set), potentials(place_potentials(basis, mol)), natom(mol.atoms.size()), max_l(basis_set.max_l()),
        screening(bound), rank(comm.rank()), ranks(comm.size()) {
    if (max_l > LIBECPINT_MAX_L)
      throw InputError("the orbital basis has l = " + std::to_string(max_l) + " shells; libecpint's potential "
                       "integrals go to l = " + std::to_string(LIBECPINT_MAX_L));
    for (const libint2::Shell& shell : obs) shells.push_back(ecpint_shell(shell));
    for (const PlacedPotential& p : potentials) max_potential_l = std::max(max_potential_l, p.U.whole.getL());
  }

  // visit(engine, s1, s2, potential) for every shell pair and potential the bound keeps, on all
  // threads; thread_state() makes each thread's accumulator, merge(it) adds it up (serially).
  template <typename State, typename Visit, typename Merge>
  void run(int derivative_order, State (*thread_state)(const PotentialPass&), Visit visit, Merge merge) {
    const CoutSilencer silencer;
#pragma omp parallel
    {
      const EcpShellPairs engine(max_l, max_potential_l, derivative_order);
      State state = thread_state(*this);
      std::size_t mine_computed = 0, mine_screened = 0;
#pragma omp for schedule(dynamic)
      for (std::size_t s1 = 0; s1 < obs.size(); ++s1) {
        if (static_cast<int>(s1 % static_cast<std::size_t>(ranks)) != rank) continue;
        for (std::size_t s2 = 0; s2 <= s1; ++s2)
          for (const PlacedPotential& p : potentials) {
            if (decay(obs[s1], p) + decay(obs[s2], p) > screening) {
              ++mine_screened;
              continue;
            }
            ++mine_computed;
            visit(engine, s1, s2, p, state);
          }
      }
#pragma omp critical
      {
        computed += mine_computed;
        screened += mine_screened;
        merge(state);
      }
    }
    quadrature_warned = silencer.silenced_something();
  }
};

Eigen::MatrixXd no_state(const PotentialPass&) { return {}; }
Eigen::MatrixXd gradient_state(const PotentialPass& pass) {
  return Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(pass.natom), 3);
}

}  // namespace

bool has_ecp(const Molecule& mol) {
  return std::any_of(mol.atoms.begin(), mol.atoms.end(), [](const Atom& atom) { return atom.ecp_electrons > 0; });
}

EcpIntegrals ecp_integrals(const libint2::BasisSet& obs, const BasisSetData& basis, const Molecule& mol,
                           double screening) {
  Communicator this_process;
  return ecp_integrals(obs, basis, mol, this_process, screening);
}

EcpIntegrals ecp_integrals(const libint2::BasisSet& obs, const BasisSetData& basis, const Molecule& mol,
                           Communicator& comm, double screening) {
  EcpIntegrals result{Eigen::MatrixXd::Zero(obs.nbf(), obs.nbf())};
  PotentialPass pass(obs, basis, mol, screening, comm);
  if (pass.potentials.empty()) return result;
  const auto shell2bf = obs.shell2bf();
  // Each (s1, s2) block is written by the one thread that visits it, summed over the potentials.
  pass.run(
      0, &no_state,
      [&](const EcpShellPairs& engine, std::size_t s1, std::size_t s2, const PlacedPotential& p, Eigen::MatrixXd&) {
        const libint2::Shell &a = obs[s1], &b = obs[s2];
        const std::vector<double> block =
            in_shell_functions(a, b, engine.integrals(p.U, pass.shells[s1], pass.shells[s2]).data);
        for (std::size_t f1 = 0; f1 < a.size(); ++f1)
          for (std::size_t f2 = 0; f2 < b.size(); ++f2) {
            result.U(shell2bf[s1] + f1, shell2bf[s2] + f2) += block[f1 * b.size() + f2];
            if (s1 != s2) result.U(shell2bf[s2] + f2, shell2bf[s1] + f1) += block[f1 * b.size() + f2];
          }
      },
      [](const Eigen::MatrixXd&) {});
  comm.allreduce_sum(result.U.data(), static_cast<std::size_t>(result.U.size()));
  std::array<double, 3> counts = {double(pass.computed), double(pass.screened), pass.quadrature_warned ? 1.0 : 0.0};
  comm.allreduce_sum(counts.data(), counts.size());
  result.computed = static_cast<std::size_t>(counts[0]);
  result.screened = static_cast<std::size_t>(counts[1]);
  result.quadrature_warned = counts[2] > 0.0;
  return result;
}

Eigen::MatrixXd ecp_gradient(const libint2::BasisSet& obs, const BasisSetData& basis, const Molecule& mol,
                             const Eigen::MatrixXd& D, Communicator& comm) {
  Eigen::MatrixXd g = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(mol.atoms.size()), 3);
  PotentialPass pass(obs, basis, mol, kEcpScreening, comm);
  if (pass.potentials.empty()) return g;
  const auto shell2bf = obs.shell2bf();
  const std::vector<std::size_t> atoms = shell_atoms(obs, mol);
  // libecpint's nine derivatives: shell A's centre, shell B's, the potential's (x, y, z each).
  pass.run(
      1, &gradient_state,
      [&](const EcpShellPairs& engine, std::size_t s1, std::size_t s2, const PlacedPotential& p,
          Eigen::MatrixXd& mine) {
        const libint2::Shell &a = obs[s1], &b = obs[s2];
        const auto derivatives = engine.derivatives(p.U, pass.shells[s1], pass.shells[s2]);
        const double both_halves = s1 == s2 ? 1.0 : 2.0;  // D is symmetric: (s2, s1) adds the same
        const std::array<std::size_t, 3> centre = {atoms[s1], atoms[s2], p.atom};
        for (std::size_t k = 0; k < 9; ++k) {
          const std::vector<double> block = in_shell_functions(a, b, derivatives[k].data);
          double sum = 0.0;
          for (std::size_t f1 = 0; f1 < a.size(); ++f1)
            for (std::size_t f2 = 0; f2 < b.size(); ++f2)
              sum += D(shell2bf[s1] + f1, shell2bf[s2] + f2) * block[f1 * b.size() + f2];
          mine(static_cast<Eigen::Index>(centre[k / 3]), static_cast<Eigen::Index>(k % 3)) += both_halves * sum;
        }
      },
      [&g](const Eigen::MatrixXd& mine) { g += mine; });
  comm.allreduce_sum(g.data(), static_cast<std::size_t>(g.size()));
  return g;
}

}  // namespace dfmp2
