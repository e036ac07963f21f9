#include "src/io/orbital_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>

#include <libint2/engine.h>  // LIBINT2_MAX_AM

#include "src/common/errors.hpp"
#include "src/integrals/libint.hpp"
#include "src/integrals/one_electron.hpp"

namespace dfmp2 {
namespace {

// Occupations further than this from 2 or 0 are not closed-shell RHF.
constexpr double kOccupationTolerance = 1e-6;

[[noreturn]] void fail(const OrbitalFileData& file, const std::string& why) {
  throw InputError("'" + file.path + "': " + why);
}

// The orbitals sorted by energy (stable, so degenerate ones keep the file's order); the number
// doubly occupied, which must come first.
Orbitals sorted_closed_shell(const OrbitalFileData& file, const Eigen::MatrixXd& C) {
  const FileOrbitals& mo = file.orbitals;
  std::vector<Eigen::Index> order(static_cast<std::size_t>(mo.eps.size()));
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) { return mo.eps[a] < mo.eps[b]; });
  Orbitals orbitals;
  orbitals.C.resize(C.rows(), C.cols());
  orbitals.eps.resize(mo.eps.size());
  bool virtual_seen = false;
  for (std::size_t p = 0; p < order.size(); ++p) {
    const Eigen::Index q = order[p];
    orbitals.C.col(static_cast<Eigen::Index>(p)) = C.col(q);
    orbitals.eps[static_cast<Eigen::Index>(p)] = mo.eps[q];
    const double n = mo.occupation[q];
    char text[160];
    if (std::abs(n - 2.0) > kOccupationTolerance && std::abs(n) > kOccupationTolerance) {
      std::snprintf(text, sizeof text,
                    "orbital %td has occupation %g: only closed-shell RHF orbitals (occupations 2 and 0) are read",
                    q + 1, n);
      fail(file, text);
    }
    if (n > 1.0 && virtual_seen) {
      std::snprintf(text, sizeof text, "occupied orbital %td lies above a virtual one: not an aufbau RHF state", q + 1);
      fail(file, text);
    }
    if (n > 1.0) ++orbitals.nocc;
    virtual_seen = virtual_seen || n < 1.0;
  }
  // No occupied orbital: the file gave no occupations (all zero), occupy_by_energy decides.
  if (orbitals.nocc == C.cols())
    fail(file, "holds no virtual orbitals, which MP2 needs (write the file with its virtual orbitals)");
  return orbitals;
}

}  // namespace

OrbitalBasis file_basis(const OrbitalFileData& file) {
  std::vector<libint2::Shell> shells;
  for (const FileShell& s : file.shells) {
    if (s.shell.l > LIBINT2_MAX_AM)
      fail(file, "a shell has angular momentum " + std::to_string(s.shell.l) + "; dfmp2's libint2 handles up to " +
                     std::to_string(LIBINT2_MAX_AM));
    shells.push_back(make_shell(s.shell, s.pure, file.molecule.atoms[static_cast<std::size_t>(s.atom)].r));
  }
  return {libint2::BasisSet(std::move(shells)), file.pure, {}};  // TREXIO's reader adds the potentials
}

FunctionMap function_map(const libint2::BasisSet& basis, const std::vector<std::size_t>& order,
                         const std::function<ShellMap(std::size_t shell)>& shell_map) {
  FunctionMap map;
  const auto& first = basis.shell2bf();
  for (std::size_t s : order) map.append(static_cast<Eigen::Index>(first[s]), shell_map(s));
  return map;
}

RunInput orbitals_input(const OrbitalFileData& file, OrbitalBasis basis, const std::vector<FunctionMap>& readings) {
  const FileOrbitals& mo = file.orbitals;
  if (!mo.C.allFinite() || !mo.eps.allFinite() || !mo.occupation.allFinite())
    fail(file, "an orbital coefficient, energy or occupation is not a finite number");
  if (static_cast<Eigen::Index>(basis.shells.nbf()) != mo.C.rows())
    fail(file, "the orbitals have " + std::to_string(mo.C.rows()) + " coefficients but the basis has " +
                   std::to_string(basis.shells.nbf()) + " functions");
  // The reading that makes the orbitals orthonormal in our overlap is the file's convention.
  std::optional<Libint2Session> session;
  if (!libint2::initialized()) session.emplace();
  const Eigen::MatrixXd S = overlap_matrix(basis.shells);
  double best = INFINITY;
  Eigen::MatrixXd C;
  for (const FunctionMap& reading : readings) {
    Eigen::MatrixXd candidate = to_libint2(mo.C, reading);
    const double error = orthonormality_error(candidate, S);
    if (error < best) {
      best = error;
      C = std::move(candidate);
    }
  }
  if (!(best <= kOrthonormalityTolerance)) {
    char text[240];
    std::snprintf(text, sizeof text,
                  "the orbitals are not orthonormal in the file's basis (max |C^T S C - 1| = %.1e > %.0e): "
                  "the file's order or normalisation of the basis functions was not understood",
                  best, kOrthonormalityTolerance);
    fail(file, text);
  }
  RunInput input;
  input.path = file.path;
  input.molecule = file.molecule;
  input.orbitals = sorted_closed_shell(file, C);
  input.unoccupied = input.orbitals->nocc == 0;
  input.orbital_basis = std::move(basis);
  return input;
}

std::string occupy_by_energy(RunInput& input, int charge, int multiplicity) {
  Molecule& mol = *input.molecule;
  Orbitals& orbitals = *input.orbitals;
  const std::string where = "'" + input.path + "' gives no orbital occupations";
  if (multiplicity != 1)
    throw InputError(where + ": its orbitals are occupied as a closed shell, which multiplicity " +
                     std::to_string(multiplicity) + " is not");
  mol.charge = charge;
  mol.multiplicity = multiplicity;
  try {
    validate(mol);
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
  orbitals.nocc = alpha_electrons(mol);
  const auto nmo = static_cast<int>(orbitals.C.cols());
  if (orbitals.nocc >= nmo)
    throw InputError(where + ", and its " + std::to_string(nmo) + " orbitals leave no virtual one for " +
                     std::to_string(electron_count(mol)) + " electrons");
  input.unoccupied = false;
  return "dfmp2: note: " + where + ": the " + std::to_string(orbitals.nocc) +
         " lowest in energy are taken as doubly occupied (charge " + std::to_string(charge) +
         "; --charge sets another)";
}

Eigen::VectorXd closed_shell_occupations(const Orbitals& orbitals) {
  Eigen::VectorXd occupation = Eigen::VectorXd::Zero(orbitals.C.cols());
  occupation.head(orbitals.nocc).setConstant(2.0);
  return occupation;
}

bool shells_pure(const OrbitalBasis& basis, int l) {
  std::optional<bool> pure;
  for (const libint2::Shell& shell : basis.shells)
    if (shell.contr[0].l == l) {
      if (pure && *pure != shell.contr[0].pure)
        throw std::runtime_error("the basis mixes spherical and Cartesian shells of l = " + std::to_string(l));
      pure = shell.contr[0].pure;
    }
  return pure.value_or(basis.pure);
}

ShellsByAtom shells_by_atom(const libint2::BasisSet& basis, const Molecule& mol) {
  const std::vector<std::size_t> atoms = shell_atoms(basis, mol);
  ShellsByAtom grouped;
  for (std::size_t a = 0; a < mol.atoms.size(); ++a)
    for (std::size_t s = 0; s < basis.size(); ++s)
      if (atoms[s] == a) {
        grouped.order.push_back(s);
        grouped.atom.push_back(static_cast<int>(a));
      }
  return grouped;
}

}  // namespace dfmp2
