#include "src/io/trexio_io.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <stdexcept>

#include <hdf5.h>
extern "C" {  // trexio.h declares C functions without a C++ guard
#include <trexio.h>
}

#include "src/common/errors.hpp"
#include "src/io/hdf5_io.hpp"
#include "src/io/orbital_file.hpp"

namespace dfmp2 {
namespace {

// TREXIO's spherical functions are m = 0, +1, −1, … (p as z, x, y), each a solid harmonic
// normalised like x^l (Racah's: d+1 = √3 xz), Cartesian ones in libint2's (alphabetical) order.
// AO function k of the shell is normalization[k] × its polynomial × the shell's radial part,
// whose x^l component has norm `radial_norm`: so it is that multiple of libint2's function.
ShellMap trexio_shell_map(int l, bool pure, const double* normalization, double radial_norm) {
  ShellMap map;
  if (pure) {
    map.index = plus_minus_order(l);
  } else {
    map.index.resize(cartesian_components(l).size());
    std::iota(map.index.begin(), map.index.end(), 0);
  }
  for (std::size_t k = 0; k < map.index.size(); ++k) map.factor.push_back(normalization[k] * radial_norm);
  return map;
}

// An open TREXIO file, closed when it goes out of scope (an HDF5 file is complete once closed).
class TrexioFile {
 public:
  TrexioFile(const std::string& path, char mode, back_end_t back_end) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // only our one-line errors reach the user
    trexio_exit_code rc = TREXIO_SUCCESS;
    file_ = trexio_open(path.c_str(), mode, back_end, &rc);
    if (file_ == nullptr || rc != TREXIO_SUCCESS) {
      file_ = nullptr;
      error_ = trexio_string_of_error(rc);
    }
  }
  ~TrexioFile() { close(); }
  TrexioFile(const TrexioFile&) = delete;
  TrexioFile& operator=(const TrexioFile&) = delete;

  trexio_t* get() const { return file_; }
  const std::string& open_error() const { return error_; }
  trexio_exit_code close() {
    const trexio_exit_code rc = file_ ? trexio_close(file_) : TREXIO_SUCCESS;
    file_ = nullptr;
    return rc;
  }

 private:
  trexio_t* file_ = nullptr;
  std::string error_;
};

// Reads named items; every problem becomes one InputError naming the file and the item.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), file_(path, 'r', TREXIO_AUTO) {
    if (!file_.get()) fail("cannot open it as a TREXIO file (" + file_.open_error() + ")");
  }
  [[noreturn]] void fail(const std::string& why) const { throw InputError("'" + path_ + "': " + why); }

  template <typename Has>
  bool has(Has has_item) const {
    return has_item(file_.get()) == TREXIO_SUCCESS;
  }
  template <typename T, typename Read>
  T scalar(Read read, const char* item) const {
    T value{};
    check(read(file_.get(), &value), item);
    return value;
  }
  template <typename T, typename Read>
  std::vector<T> array(Read read, std::size_t n, const char* item) const {
    std::vector<T> values(n);
    check(read(file_.get(), values.data(), static_cast<int64_t>(n)), item);
    return values;
  }
  // An optional array, `fallback` everywhere when absent.
  template <typename Has, typename Read>
  std::vector<double> array_or(Has has_item, Read read, std::size_t n, double fallback, const char* item) const {
    return has(has_item) ? array<double>(read, n, item) : std::vector<double>(n, fallback);
  }
  std::string text(trexio_exit_code (*read)(trexio_t*, char*, int32_t), const char* item) const {
    char buffer[256] = {};
    check(read(file_.get(), buffer, sizeof buffer), item);
    return buffer;
  }
  std::vector<std::string> texts(trexio_exit_code (*read)(trexio_t*, char**, int32_t), std::size_t n,
                                 const char* item) const {
    std::vector<std::array<char, 64>> buffers(n, std::array<char, 64>{});
    std::vector<char*> rows;
    for (auto& buffer : buffers) rows.push_back(buffer.data());
    check(read(file_.get(), rows.data(), 63), item);
    return {rows.begin(), rows.end()};
  }
  const std::string& path() const { return path_; }

 private:
  void check(trexio_exit_code rc, const char* item) const {
    if (rc == TREXIO_ATTR_MISSING || rc == TREXIO_DSET_MISSING) fail(std::string("it has no ") + item);
    if (rc != TREXIO_SUCCESS) fail(std::string("cannot read ") + item + " (" + trexio_string_of_error(rc) + ")");
  }
  std::string path_;
  TrexioFile file_;
};

// ecp_z_core: the electrons an effective core potential replaces on each nucleus (none without
// an ecp group).
std::vector<int32_t> core_electrons(const Reader& in, std::size_t n) {
  if (!in.has(trexio_has_ecp_z_core) && !in.has(trexio_has_ecp_num)) return std::vector<int32_t>(n, 0);
  return in.array<int32_t>(trexio_read_safe_ecp_z_core, n, "ecp_z_core");
}

// The nuclei; an ECP atom's nucleus_charge is its charge less its core (TREXIO's Z_eff, as
// PySCF writes it), so its element is nucleus_charge + ecp_z_core.
Molecule read_nucleus(const Reader& in) {
  const auto n = static_cast<std::size_t>(in.scalar<int32_t>(trexio_read_nucleus_num, "nucleus_num"));
  if (n < 1) in.fail("nucleus_num is 0");
  const auto charge = in.array<double>(trexio_read_safe_nucleus_charge, n, "nucleus_charge");
  const auto coord = in.array<double>(trexio_read_safe_nucleus_coord, 3 * n, "nucleus_coord");
  const auto core = core_electrons(in, n);
  Molecule mol;
  for (std::size_t a = 0; a < n; ++a) {
    const long Z = std::lround(charge[a]) + core[a];
    if (std::abs(charge[a] - std::round(charge[a])) > 1e-10 || Z < 1 || Z > kMaxAtomicNumber || core[a] < 0 ||
        core[a] >= Z)
      in.fail("nucleus " + std::to_string(a) + " has nucleus_charge " + std::to_string(charge[a]) + " and ecp_z_core " +
              std::to_string(core[a]) + ", which make no element (ghost atoms are not supported)");
    Atom atom;
    atom.Z = static_cast<int>(Z);
    atom.ecp_electrons = core[a];
    std::copy(coord.begin() + static_cast<long>(3 * a), coord.begin() + static_cast<long>(3 * a + 3), atom.r.begin());
    mol.atoms.push_back(atom);
  }
  return mol;
}

// nucleus_label, where it names an element, must name the one nucleus_charge and ecp_z_core make:
// a file giving an ECP atom's Z_eff without its ecp group would read as another element (iodine's
// 25 as manganese).
void check_labels(const Reader& in, const Molecule& mol) {
  if (!in.has(trexio_has_nucleus_label)) return;
  const std::vector<std::string> labels = in.texts(trexio_read_nucleus_label, mol.atoms.size(), "nucleus_label");
  for (std::size_t a = 0; a < labels.size(); ++a) {
    const std::string letters = labels[a].substr(0, labels[a].find_first_of("0123456789_- "));
    int named = 0;
    try {
      named = atomic_number(letters);
    } catch (const InputError&) {
      continue;  // a label that names no element says nothing
    }
    if (named != mol.atoms[a].Z)
      in.fail("nucleus " + std::to_string(a) + " is labelled '" + labels[a] + "', but its nucleus_charge and ecp_z_core (" +
              std::to_string(mol.atoms[a].ecp_electrons) + ") make " + element_symbol(mol.atoms[a].Z) +
              " (an effective core potential's charge without the ecp group?)");
  }
}

// The ecp group's terms on each nucleus, with its core and highest channel (the local one, l =
// max_ang_mom_plus_1). TREXIO's power is that of r, the .gbs files' (and libecpint's) less 2.
std::vector<ElementEcp> read_ecp_terms(const Reader& in, const Molecule& mol) {
  const std::size_t n = mol.atoms.size();
  const auto lmax = in.array<int32_t>(trexio_read_safe_ecp_max_ang_mom_plus_1, n, "ecp_max_ang_mom_plus_1");
  const auto num = static_cast<std::size_t>(in.scalar<int32_t>(trexio_read_ecp_num, "ecp_num"));
  const auto atom = in.array<int32_t>(trexio_read_safe_ecp_nucleus_index, num, "ecp_nucleus_index");
  const auto l = in.array<int32_t>(trexio_read_safe_ecp_ang_mom, num, "ecp_ang_mom");
  const auto power = in.array<int32_t>(trexio_read_safe_ecp_power, num, "ecp_power");
  const auto exponent = in.array<double>(trexio_read_safe_ecp_exponent, num, "ecp_exponent");
  const auto coefficient = in.array<double>(trexio_read_safe_ecp_coefficient, num, "ecp_coefficient");
  std::vector<ElementEcp> per_atom(n);
  for (std::size_t a = 0; a < n; ++a) {
    per_atom[a] = {mol.atoms[a].ecp_electrons, lmax[a], {}};
    if (mol.atoms[a].ecp_electrons > 0 && (lmax[a] < 0 || lmax[a] > max_ecp_angular_momentum()))
      in.fail("nucleus " + std::to_string(a) + " has ecp_max_ang_mom_plus_1 " + std::to_string(lmax[a]) +
              "; libecpint computes channels to l = " + std::to_string(max_ecp_angular_momentum()));
  }
  for (std::size_t k = 0; k < num; ++k) {
    const auto a = static_cast<std::size_t>(atom[k]);
    if (atom[k] < 0 || a >= n || mol.atoms[a].ecp_electrons == 0 || l[k] < 0 || l[k] > lmax[a] || power[k] < -2 ||
        power[k] > 0 || !(exponent[k] > 0.0) || !std::isfinite(exponent[k] * coefficient[k]))
      in.fail("ECP term " + std::to_string(k) + " (nucleus " + std::to_string(atom[k]) + ", l " + std::to_string(l[k]) +
              ", power " + std::to_string(power[k]) + ", exponent " + std::to_string(exponent[k]) +
              ") is not one dfmp2 takes: a nucleus with ecp_z_core > 0, l up to its ecp_max_ang_mom_plus_1, "
              "power -2, -1 or 0, exponent > 0, both finite");
    per_atom[a].terms.push_back({l[k], power[k] + 2, exponent[k], coefficient[k]});
  }
  return per_atom;
}

// The file's potentials by element, each nucleus's checked to be its element's (dfmp2, as the
// .gbs files, takes one per element) and to have a local channel.
std::map<int, ElementEcp> read_potentials(const Reader& in, const Molecule& mol) {
  std::map<int, ElementEcp> by_Z;
  if (!in.has(trexio_has_ecp_num)) return by_Z;
  const std::vector<ElementEcp> per_atom = read_ecp_terms(in, mol);
  for (std::size_t a = 0; a < per_atom.size(); ++a) {
    const ElementEcp& ecp = per_atom[a];
    const int Z = mol.atoms[a].Z;
    if (ecp.core_electrons > 0 &&
        std::none_of(ecp.terms.begin(), ecp.terms.end(), [&](const EcpTerm& t) { return t.l == ecp.lmax; }))
      in.fail("nucleus " + std::to_string(a) + "'s potential has no term in its local channel, l = " +
              std::to_string(ecp.lmax) + " (ecp_max_ang_mom_plus_1)");
    if (ecp.core_electrons > 0) by_Z.emplace(Z, ecp);
  }
  for (std::size_t a = 0; a < per_atom.size(); ++a) {
    const auto found = by_Z.find(mol.atoms[a].Z);
    if (found != by_Z.end() && found->second != per_atom[a])
      in.fail("the atoms of " + element_symbol(mol.atoms[a].Z) + " carry different effective core potentials "
              "(nucleus " + std::to_string(a) + "'s differs): dfmp2 takes one per element");
  }
  return by_Z;
}

// The Gaussian shells, their primitives' coefficients taken to those of normalised primitives;
// radial_norm[s] is the norm of shell s's x^l component as the file's factors make it.
std::vector<FileShell> read_basis(const Reader& in, std::size_t natom, std::vector<double>& radial_norm) {
  const std::string type = in.text(trexio_read_basis_type, "basis_type");
  if (type != "Gaussian" && type != "gaussian") in.fail("basis_type is '" + type + "'; only Gaussian bases are read");
  const auto nshell = static_cast<std::size_t>(in.scalar<int32_t>(trexio_read_basis_shell_num, "basis_shell_num"));
  const auto nprim = static_cast<std::size_t>(in.scalar<int32_t>(trexio_read_basis_prim_num, "basis_prim_num"));
  const auto atom = in.array<int32_t>(trexio_read_safe_basis_nucleus_index, nshell, "basis_nucleus_index");
  const auto l = in.array<int32_t>(trexio_read_safe_basis_shell_ang_mom, nshell, "basis_shell_ang_mom");
  const auto shell_factor = in.array_or(trexio_has_basis_shell_factor, trexio_read_safe_basis_shell_factor, nshell,
                                        1.0, "basis_shell_factor");
  const auto shell_of = in.array<int32_t>(trexio_read_safe_basis_shell_index, nprim, "basis_shell_index");
  const auto exponent = in.array<double>(trexio_read_safe_basis_exponent, nprim, "basis_exponent");
  const auto coefficient = in.array<double>(trexio_read_safe_basis_coefficient, nprim, "basis_coefficient");
  const auto prim_factor = in.array_or(trexio_has_basis_prim_factor, trexio_read_safe_basis_prim_factor, nprim, 1.0,
                                       "basis_prim_factor");
  std::vector<FileShell> shells(nshell);
  std::vector<std::vector<double>> unnormalised(nshell);  // coefficients of x^l e^(−α r²)
  for (std::size_t s = 0; s < nshell; ++s) {
    if (atom[s] < 0 || static_cast<std::size_t>(atom[s]) >= natom || l[s] < 0)
      in.fail("shell " + std::to_string(s) + " has nucleus index " + std::to_string(atom[s]) + " and angular momentum " +
              std::to_string(l[s]));
    shells[s] = {atom[s], {l[s], {}, {}}, false};
  }
  for (std::size_t p = 0; p < nprim; ++p) {
    const auto s = static_cast<std::size_t>(shell_of[p]);
    if (shell_of[p] < 0 || s >= nshell || !(exponent[p] > 0.0) || !std::isfinite(exponent[p] * coefficient[p]))
      in.fail("primitive " + std::to_string(p) + " has shell index " + std::to_string(shell_of[p]) + ", exponent " +
              std::to_string(exponent[p]) + " and coefficient " + std::to_string(coefficient[p]));
    const double u = shell_factor[s] * coefficient[p] * prim_factor[p];
    shells[s].shell.exponents.push_back(exponent[p]);
    shells[s].shell.coefficients.push_back(u / primitive_norm(l[s], exponent[p]));
    unnormalised[s].push_back(u);
  }
  radial_norm.resize(nshell);
  for (std::size_t s = 0; s < nshell; ++s) {
    radial_norm[s] = xl_norm(l[s], shells[s].shell.exponents, unnormalised[s]);
    if (!(radial_norm[s] > 0.0)) in.fail("shell " + std::to_string(s) + " has no primitive or vanishes");
  }
  return shells;
}

// Checks that ao_shell lists each shell's functions together, in shell order; returns the
// first AO of every shell.
std::vector<std::size_t> ao_offsets(const Reader& in, const OrbitalBasis& basis, const std::vector<int32_t>& ao_shell) {
  std::vector<std::size_t> first;
  std::size_t k = 0;
  for (std::size_t s = 0; s < basis.shells.size(); ++s) {
    first.push_back(k);
    for (std::size_t f = 0; f < basis.shells[s].size(); ++f, ++k)
      if (k >= ao_shell.size() || ao_shell[k] != static_cast<int32_t>(s))
        in.fail("ao_shell does not list the functions of each shell together, in shell order");
  }
  return first;
}

// Occupations from the file, else 2 for the electron_up_num lowest orbitals.
Eigen::VectorXd occupations(const Reader& in, const Eigen::VectorXd& eps, int32_t up) {
  const auto nmo = static_cast<std::size_t>(eps.size());
  if (in.has(trexio_has_mo_occupation))
    return Eigen::Map<const Eigen::VectorXd>(in.array<double>(trexio_read_safe_mo_occupation, nmo, "mo_occupation").data(),
                                             eps.size());
  if (up < 0) in.fail("it gives neither mo_occupation nor electron_up_num and electron_dn_num");
  std::vector<Eigen::Index> order(nmo);
  std::iota(order.begin(), order.end(), Eigen::Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Eigen::Index a, Eigen::Index b) { return eps[a] < eps[b]; });
  Eigen::VectorXd n = Eigen::VectorXd::Zero(eps.size());
  for (std::size_t i = 0; i < std::min(nmo, static_cast<std::size_t>(up)); ++i) n[order[i]] = 2.0;
  return n;
}

FileOrbitals read_mo(const Reader& in, std::size_t nao, int32_t up) {
  const auto nmo = static_cast<std::size_t>(in.scalar<int32_t>(trexio_read_mo_num, "mo_num"));
  if (nmo < 1) in.fail("mo_num is 0");
  if (in.has(trexio_has_mo_coefficient_im)) in.fail("complex orbitals (mo_coefficient_im) are not supported");
  if (in.has(trexio_has_mo_spin)) {
    const auto spin = in.array<int32_t>(trexio_read_safe_mo_spin, nmo, "mo_spin");
    if (std::any_of(spin.begin(), spin.end(), [](int32_t s) { return s != 0; }))
      in.fail("it holds β orbitals (mo_spin 1): UHF orbitals are not supported yet, only closed-shell RHF ones");
  }
  const auto c = in.array<double>(trexio_read_safe_mo_coefficient, nmo * nao, "mo_coefficient");
  const auto eps = in.array<double>(trexio_read_safe_mo_energy, nmo, "mo_energy");
  FileOrbitals mo;
  // mo_coefficient is [mo_num][ao_num] row-major: orbital i's AOs are contiguous.
  mo.C = Eigen::Map<const Eigen::MatrixXd>(c.data(), static_cast<Eigen::Index>(nao), static_cast<Eigen::Index>(nmo));
  mo.eps = Eigen::Map<const Eigen::VectorXd>(eps.data(), static_cast<Eigen::Index>(nmo));
  mo.occupation = occupations(in, mo.eps, up);
  return mo;
}

}  // namespace

bool is_trexio(const std::string& path) {
  // The text back end's directory has metadata.txt from its creation on; asking the library about
  // another directory would leave a .lock file in it.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return std::filesystem::is_regular_file(std::filesystem::path(path) / "metadata.txt", ec);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (H5Fis_hdf5(path.c_str()) <= 0) return false;
  require_hdf5_survives(path);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) return false;
  const bool trexio = H5Lexists(file, "metadata", H5P_DEFAULT) > 0;
  H5Fclose(file);
  return trexio;
}

RunInput read_trexio(const std::string& path) {
  const Reader in(path);
  OrbitalFileData file;
  file.path = path;
  file.molecule = read_nucleus(in);
  check_labels(in, file.molecule);
  std::map<int, ElementEcp> potentials = read_potentials(in, file.molecule);
  int32_t up = -1;
  if (in.has(trexio_has_electron_up_num) && in.has(trexio_has_electron_dn_num)) {
    up = in.scalar<int32_t>(trexio_read_electron_up_num, "electron_up_num");
    const auto dn = in.scalar<int32_t>(trexio_read_electron_dn_num, "electron_dn_num");
    if (up != dn) in.fail("electron_up_num ≠ electron_dn_num: open-shell orbitals are not supported yet");
  }
  std::vector<double> radial_norm;
  file.shells = read_basis(in, file.molecule.atoms.size(), radial_norm);
  file.pure = in.scalar<int32_t>(trexio_read_ao_cartesian, "ao_cartesian") == 0;
  for (FileShell& s : file.shells) s.pure = file.pure && s.shell.l >= 2;
  OrbitalBasis basis = file_basis(file);
  const auto nao = static_cast<std::size_t>(in.scalar<int32_t>(trexio_read_ao_num, "ao_num"));
  if (nao != static_cast<std::size_t>(basis.shells.nbf()))
    in.fail("ao_num is " + std::to_string(nao) + " but the shells give " + std::to_string(basis.shells.nbf()) +
            (file.pure ? " spherical" : " Cartesian") + " functions");
  const auto first_ao = ao_offsets(in, basis, in.array<int32_t>(trexio_read_safe_ao_shell, nao, "ao_shell"));
  const auto normalization =
      in.array_or(trexio_has_ao_normalization, trexio_read_safe_ao_normalization, nao, 1.0, "ao_normalization");
  file.orbitals = read_mo(in, nao, up);
  const auto electrons = static_cast<int>(std::lround(file.orbitals.occupation.sum()));
  if (up >= 0 && electrons != 2 * up)
    in.fail("mo_occupation gives " + std::to_string(electrons) + " electrons, electron_up_num and electron_dn_num " +
            std::to_string(2 * up));
  int charge = 0;  // of the nuclei less the cores: the electrons are the valence ones
  for (const Atom& atom : file.molecule.atoms) charge += nuclear_charge(atom);
  file.molecule.charge = charge - electrons;

  std::vector<std::size_t> order(basis.shells.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  const FunctionMap map = function_map(basis.shells, order, [&](std::size_t s) {
    const int l = basis.shells[s].contr[0].l;
    return trexio_shell_map(l, file.pure && l >= 1, &normalization[first_ao[s]], radial_norm[s]);
  });
  basis.potentials = std::move(potentials);
  return orbitals_input(file, std::move(basis), {map});
}

namespace {

// Each write checked; a failure names the item.
void put(trexio_exit_code rc, const char* item) {
  if (rc != TREXIO_SUCCESS) throw std::runtime_error(std::string("cannot write ") + item + " (" + trexio_string_of_error(rc) + ")");
}

void write_nucleus_and_electrons(trexio_t* f, const Molecule& mol) {
  const auto n = static_cast<int32_t>(mol.atoms.size());
  std::vector<double> charge, coord;
  std::vector<const char*> label;
  for (const Atom& atom : mol.atoms) {
    charge.push_back(nuclear_charge(atom));  // an ECP atom's less its core, as TREXIO's Z_eff
    coord.insert(coord.end(), atom.r.begin(), atom.r.end());
    label.push_back(element_symbol(atom.Z).c_str());
  }
  put(trexio_write_nucleus_num(f, n), "nucleus_num");
  put(trexio_write_safe_nucleus_charge(f, charge.data(), n), "nucleus_charge");
  put(trexio_write_safe_nucleus_coord(f, coord.data(), 3 * n), "nucleus_coord");
  put(trexio_write_nucleus_label(f, label.data(), 4), "nucleus_label");
  put(trexio_write_nucleus_repulsion(f, nuclear_repulsion(mol)), "nucleus_repulsion");
  const int32_t electrons = electron_count(mol);
  put(trexio_write_electron_num(f, electrons), "electron_num");
  put(trexio_write_electron_up_num(f, electrons / 2), "electron_up_num");
  put(trexio_write_electron_dn_num(f, electrons / 2), "electron_dn_num");
}

// The ecp group, when an atom carries a potential: each nucleus's core electrons and local
// channel (0 for an atom without one), then the terms of each potential on its nucleus.
void write_potentials(trexio_t* f, const Molecule& mol, const std::map<int, ElementEcp>& potentials) {
  if (std::none_of(mol.atoms.begin(), mol.atoms.end(), [](const Atom& atom) { return atom.ecp_electrons > 0; })) return;
  std::vector<int32_t> core, lmax, atom_of, l, power;
  std::vector<double> exponent, coefficient;
  for (std::size_t a = 0; a < mol.atoms.size(); ++a) {
    const Atom& atom = mol.atoms[a];
    core.push_back(atom.ecp_electrons);
    lmax.push_back(atom.ecp_electrons > 0 ? potentials.at(atom.Z).lmax : 0);
    if (atom.ecp_electrons == 0) continue;
    for (const EcpTerm& term : potentials.at(atom.Z).terms) {
      atom_of.push_back(static_cast<int32_t>(a));
      l.push_back(term.l);
      power.push_back(term.power - 2);  // of r: the .gbs files' power less 2
      exponent.push_back(term.exponent);
      coefficient.push_back(term.coefficient);
    }
  }
  const auto n = static_cast<int32_t>(core.size()), num = static_cast<int32_t>(l.size());
  put(trexio_write_safe_ecp_z_core(f, core.data(), n), "ecp_z_core");
  put(trexio_write_safe_ecp_max_ang_mom_plus_1(f, lmax.data(), n), "ecp_max_ang_mom_plus_1");
  put(trexio_write_ecp_num(f, num), "ecp_num");
  put(trexio_write_safe_ecp_nucleus_index(f, atom_of.data(), num), "ecp_nucleus_index");
  put(trexio_write_safe_ecp_ang_mom(f, l.data(), num), "ecp_ang_mom");
  put(trexio_write_safe_ecp_power(f, power.data(), num), "ecp_power");
  put(trexio_write_safe_ecp_exponent(f, exponent.data(), num), "ecp_exponent");
  put(trexio_write_safe_ecp_coefficient(f, coefficient.data(), num), "ecp_coefficient");
}

// The shells in `grouped` order: coefficients of normalised primitives (libint2's contraction,
// unit-normalised) with those primitives' normalisation as prim_factor, shell_factor 1, so the
// radial part's x^l component has norm 1.
void write_basis(trexio_t* f, const OrbitalBasis& basis, const ShellsByAtom& grouped) {
  std::vector<int32_t> shell_l, prim_shell;
  std::vector<double> exponent, coefficient, prim_factor;
  for (std::size_t k = 0; k < grouped.order.size(); ++k) {
    const libint2::Shell& shell = basis.shells[grouped.order[k]];
    shell_l.push_back(shell.contr[0].l);
    for (std::size_t p = 0; p < shell.nprim(); ++p) {
      prim_shell.push_back(static_cast<int32_t>(k));
      exponent.push_back(shell.alpha[p]);
      coefficient.push_back(shell.coeff_normalized(0, p));
      prim_factor.push_back(primitive_norm(shell.contr[0].l, shell.alpha[p]));
    }
  }
  const auto nshell = static_cast<int32_t>(shell_l.size()), nprim = static_cast<int32_t>(exponent.size());
  const std::vector<double> shell_factor(shell_l.size(), 1.0);
  put(trexio_write_basis_type(f, "Gaussian", 16), "basis_type");
  put(trexio_write_basis_shell_num(f, nshell), "basis_shell_num");
  put(trexio_write_basis_prim_num(f, nprim), "basis_prim_num");
  put(trexio_write_safe_basis_nucleus_index(f, grouped.atom.data(), nshell), "basis_nucleus_index");
  put(trexio_write_safe_basis_shell_ang_mom(f, shell_l.data(), nshell), "basis_shell_ang_mom");
  put(trexio_write_safe_basis_shell_factor(f, shell_factor.data(), nshell), "basis_shell_factor");
  put(trexio_write_safe_basis_shell_index(f, prim_shell.data(), nprim), "basis_shell_index");
  put(trexio_write_safe_basis_exponent(f, exponent.data(), nprim), "basis_exponent");
  put(trexio_write_safe_basis_coefficient(f, coefficient.data(), nprim), "basis_coefficient");
  put(trexio_write_safe_basis_prim_factor(f, prim_factor.data(), nprim), "basis_prim_factor");
}

// TREXIO has one spherical/Cartesian choice for the whole basis.
bool uniformly_pure(const OrbitalBasis& basis) {
  for (const libint2::Shell& shell : basis.shells)
    if (shell.contr[0].l >= 2 && shell.contr[0].pure != basis.pure)
      throw std::runtime_error("TREXIO holds spherical or Cartesian functions, and this basis mixes them");
  return basis.pure;
}

}  // namespace

void write_trexio(const std::string& path, const RunResult& r) {
  if (!r.geometry || !r.orbitals || !r.orbital_basis) throw std::runtime_error("the run has no orbitals to write");
  const OrbitalBasis& basis = *r.orbital_basis;
  const Orbitals& orbitals = *r.orbitals;
  const bool pure = uniformly_pure(basis);
  const ShellsByAtom grouped = shells_by_atom(basis.shells, *r.geometry);
  TrexioFile file(path, 'w', TREXIO_HDF5);
  trexio_t* f = file.get();
  if (!f) throw std::runtime_error("cannot create the TREXIO file (" + file.open_error() + ")");
  const char* code[] = {"dfmp2 0.1.0"};
  put(trexio_write_metadata_code_num(f, 1), "metadata_code_num");
  put(trexio_write_metadata_code(f, code, 16), "metadata_code");
  write_nucleus_and_electrons(f, *r.geometry);
  write_potentials(f, *r.geometry, basis.potentials);
  write_basis(f, basis, grouped);

  // Unit-normalised Cartesian functions: ao_normalization 1/‖libint2's function‖.
  std::vector<int32_t> ao_shell;
  std::vector<double> normalization;
  FunctionMap map;
  for (std::size_t k = 0; k < grouped.order.size(); ++k) {
    const libint2::Shell& shell = basis.shells[grouped.order[k]];
    const int l = shell.contr[0].l;
    const std::size_t first = normalization.size();
    for (std::size_t m = 0; m < shell.size(); ++m) {
      ao_shell.push_back(static_cast<int32_t>(k));
      normalization.push_back(pure ? 1.0 : 1.0 / cartesian_norm(cartesian_components(l)[m]));
    }
    map.append(static_cast<Eigen::Index>(basis.shells.shell2bf()[grouped.order[k]]),
               trexio_shell_map(l, pure && l >= 1, &normalization[first], 1.0));
  }
  const auto nao = static_cast<int32_t>(ao_shell.size()), nmo = static_cast<int32_t>(orbitals.C.cols());
  put(trexio_write_ao_cartesian(f, pure ? 0 : 1), "ao_cartesian");
  put(trexio_write_ao_num(f, nao), "ao_num");
  put(trexio_write_safe_ao_shell(f, ao_shell.data(), nao), "ao_shell");
  put(trexio_write_safe_ao_normalization(f, normalization.data(), nao), "ao_normalization");

  const Eigen::MatrixXd C = from_libint2(orbitals.C, map);  // column p: orbital p's AOs, contiguous
  const Eigen::VectorXd occupation = closed_shell_occupations(orbitals);
  const std::vector<int32_t> spin(static_cast<std::size_t>(nmo), 0);
  put(trexio_write_mo_type(f, "RHF", 8), "mo_type");
  put(trexio_write_mo_num(f, nmo), "mo_num");
  put(trexio_write_safe_mo_coefficient(f, C.data(), static_cast<int64_t>(C.size())), "mo_coefficient");
  put(trexio_write_safe_mo_energy(f, orbitals.eps.data(), nmo), "mo_energy");
  put(trexio_write_safe_mo_occupation(f, occupation.data(), nmo), "mo_occupation");
  put(trexio_write_safe_mo_spin(f, spin.data(), nmo), "mo_spin");
  put(file.close(), "the file");
}

}  // namespace dfmp2
