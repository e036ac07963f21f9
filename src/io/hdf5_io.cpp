#include "src/io/hdf5_io.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <fcntl.h>
#include <hdf5.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/common/errors.hpp"
#include "src/common/text.hpp"

namespace dfmp2 {
namespace {

// ---------------------------------------------------------------------------------------------
// Handles

// Owns one hid_t and closes it with the matching H5?close, so nothing leaks when we throw.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      close_ = other.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  bool valid() const { return id_ >= 0; }
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }
  // Closes now and reports whether HDF5 succeeded (a file's close flushes its data).
  bool close() {
    const herr_t status = id_ >= 0 ? close_(id_) : 0;
    id_ = -1;
    return status >= 0;
  }

 private:
  void reset() {
    if (id_ >= 0) close_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

Handle file_handle(hid_t id) { return {id, H5Fclose}; }
Handle group_handle(hid_t id) { return {id, H5Gclose}; }
Handle dataset_handle(hid_t id) { return {id, H5Dclose}; }
Handle space_handle(hid_t id) { return {id, H5Sclose}; }
Handle type_handle(hid_t id) { return {id, H5Tclose}; }
Handle attribute_handle(hid_t id) { return {id, H5Aclose}; }
Handle plist_handle(hid_t id) { return {id, H5Pclose}; }

// HDF5 prints its error stack to stderr by default; users should see only our one line.
void silence_hdf5_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// ---------------------------------------------------------------------------------------------
// Surviving libhdf5 on damaged files

// libhdf5 1.10 trusts a file's structures: a damaged file can make it dereference NULL or loop
// forever inside H5Fopen, H5Lexists, H5Aread and the like (fuzzing found dozens of such files),
// which no check of ours can see coming. So a forked child first has libhdf5 go over every
// structure the reader touches, attribute values included, and then runs the reader itself (its
// own conversions take other paths through libhdf5: a vlen string attribute read as a string
// looped where reading it as stored did not); the file is read only when the child came through.
// The DF tensor's rows are read on demand, later, so a large B_ia^P is not read twice.

// Walking a dfmp2 input's few objects takes milliseconds; this long means libhdf5 is looping.
constexpr unsigned kWalkSeconds = 5;

herr_t touch_object(hid_t root, const char* name, const H5O_info_t* info, void*) {
  const Handle object{H5Oopen(root, name, H5P_DEFAULT), H5Oclose};
  if (!object.valid()) return 0;
  for (hsize_t k = 0; k < info->num_attrs; ++k) {
    const Handle attribute = attribute_handle(
        H5Aopen_by_idx(object, ".", H5_INDEX_NAME, H5_ITER_NATIVE, k, H5P_DEFAULT, H5P_DEFAULT));
    const Handle type = type_handle(H5Aget_type(attribute));
    const Handle space = space_handle(H5Aget_space(attribute));
    const hssize_t count = H5Sget_simple_extent_npoints(space);
    const std::size_t size = H5Tget_size(type);
    // Read as stored (variable-length values land in memory libhdf5 allocates, never freed:
    // the child ends right after), unless it claims more than an attribute can hold.
    if (count > 0 && size > 0 && static_cast<hsize_t>(count) * size <= (hsize_t{1} << 26)) {
      std::vector<char> value(static_cast<std::size_t>(count) * size);
      H5Aread(attribute, type, value.data());
    }
  }
  if (info->type == H5O_TYPE_DATASET) {
    const Handle type = type_handle(H5Dget_type(object));
    const Handle space = space_handle(H5Dget_space(object));
    const Handle plist = plist_handle(H5Dget_create_plist(object));
    H5D_space_status_t status{};
    H5Dget_space_status(object, &status);
    H5Dget_storage_size(object);
    H5Pget_nfilters(plist);
  }
  return 0;
}


// ---------------------------------------------------------------------------------------------
// Reading

std::string dims_text(const std::vector<hsize_t>& dims) {
  std::string text;
  for (hsize_t d : dims) text.append("[").append(std::to_string(d)).append("]");
  return text;
}

// The open input file; every error names the file (and the object) in one line.
class Hdf5Reader {
 public:
  // `survival_checked`: require_hdf5_survives(path) has already come through (or this is its child).
  explicit Hdf5Reader(const std::string& path, bool survival_checked = false) : path_(path) {
    silence_hdf5_errors();
    // Checked with std::ifstream first: H5Fis_hdf5 cannot tell "missing" from "not HDF5".
    std::error_code ec;  // the non-throwing overload: a permission problem is "cannot open" too
    if (!std::filesystem::is_regular_file(path, ec) || !std::ifstream(path))
      throw InputError("cannot open '" + path + "'");
    const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
    if (is_hdf5 == 0) throw InputError("'" + path + "' is not an HDF5 file");
    if (!survival_checked) require_hdf5_survives(path);
    // Read-only: the input must never be modified.
    file_ = file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    if (is_hdf5 < 0 || !file_.valid()) throw InputError("cannot open '" + path + "'");
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError("'" + path_ + "': " + what);
  }

  // True when every component of an absolute path like /scf/mo_energies exists
  // (H5Lexists fails rather than returning false when an intermediate group is missing).
  bool exists(const std::string& name) const {
    std::size_t pos = 0;
    while (pos != std::string::npos) {
      pos = name.find('/', pos + 1);
      const std::string prefix = name.substr(0, pos);
      if (H5Lexists(file_, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    }
    return true;
  }

  Handle open_group(const std::string& name) const {
    Handle group = group_handle(H5Gopen2(file_, name.c_str(), H5P_DEFAULT));
    if (!group.valid()) fail(name + " is not a group");
    return group;
  }

  // A dataset of the given rank and type class (H5T_FLOAT accepts integers too: HDF5
  // converts them exactly enough for coordinates). Returns its dimensions.
  Handle open_dataset(const std::string& name, int rank, H5T_class_t type_class,
                      std::vector<hsize_t>& dims) const {
    if (!exists(name)) fail("dataset " + name + " is missing");
    Handle dataset = dataset_handle(H5Dopen2(file_, name.c_str(), H5P_DEFAULT));
    if (!dataset.valid()) fail(name + " is not a dataset");
    const Handle type = type_handle(H5Dget_type(dataset));
    const H5T_class_t found = H5Tget_class(type);
    const bool numeric_ok =
        found == type_class || (type_class == H5T_FLOAT && found == H5T_INTEGER);
    if (!numeric_ok)
      fail("dataset " + name + " must hold " +
           (type_class == H5T_INTEGER ? "integers" : "floating-point numbers") + ", found " +
           class_name(found));
    const Handle space = space_handle(H5Dget_space(dataset));
    const int found_rank = H5Sget_simple_extent_ndims(space);
    if (H5Sget_simple_extent_type(space) != H5S_SIMPLE || found_rank != rank)
      fail("dataset " + name + " must have rank " + std::to_string(rank) + ", found rank " +
           std::to_string(std::max(found_rank, 0)));
    dims.assign(static_cast<std::size_t>(rank), 0);
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
    require_stored(dataset, name, dims, H5Tget_size(type));
    return dataset;
  }

  // What a dataset declares must be stored in this file: a damaged or hostile file must not
  // make the reader allocate on its word alone, nor read other files (external storage).
  void require_stored(const Handle& dataset, const std::string& name,
                      const std::vector<hsize_t>& dims, std::size_t element_size) const {
    const Handle plist = plist_handle(H5Dget_create_plist(dataset));
    if (!plist.valid() || element_size == 0) fail("cannot read dataset " + name);
    if (H5Pget_layout(plist) == H5D_VIRTUAL || H5Pget_external_count(plist) != 0)
      fail("dataset " + name + " keeps its data in other files; only self-contained files are read");
    hsize_t bytes = element_size;
    for (hsize_t d : dims) {
      if (d != 0 && bytes > std::numeric_limits<std::size_t>::max() / d)
        fail("dataset " + name + " is too large: " + dims_text(dims));
      bytes *= d;
    }
    if (bytes == 0) return;
    H5D_space_status_t status{};
    if (H5Dget_space_status(dataset, &status) < 0 || status != H5D_SPACE_STATUS_ALLOCATED)
      fail("dataset " + name + " holds no data (created but never written)");
    // Compressed data may take less room than it declares, uncompressed data cannot.
    if (H5Pget_nfilters(plist) == 0 && H5Dget_storage_size(dataset) < bytes)
      fail("dataset " + name + " declares " + dims_text(dims) + " but the file holds only " +
           std::to_string(H5Dget_storage_size(dataset)) + " of its " + std::to_string(bytes) +
           " bytes");
  }

  template <typename T>
  std::vector<T> read_all(const Handle& dataset, const std::string& name, hid_t memory_type,
                          std::size_t count) const {
    std::vector<T> values(count);
    if (count > 0 &&
        H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
      fail("cannot read dataset " + name);
    return values;
  }

  std::vector<double> read_doubles(const std::string& name, int rank,
                                   std::vector<hsize_t>& dims) const {
    const Handle dataset = open_dataset(name, rank, H5T_FLOAT, dims);
    return read_all<double>(dataset, name, H5T_NATIVE_DOUBLE, product(dims));
  }

  std::vector<long long> read_integers(const std::string& name, int rank,
                                       std::vector<hsize_t>& dims) const {
    const Handle dataset = open_dataset(name, rank, H5T_INTEGER, dims);
    return read_all<long long>(dataset, name, H5T_NATIVE_LLONG, product(dims));
  }

  void require_finite(const std::string& name, const double* values, std::size_t count) const {
    for (std::size_t k = 0; k < count; ++k)
      if (!std::isfinite(values[k]))
        fail("dataset " + name + " holds a non-finite value (" + std::to_string(values[k]) +
             ") at flat index " + std::to_string(k));
  }

  // Attributes. `where` is the object's path, for messages.
  Handle open_attribute(hid_t object, const std::string& where, const std::string& attr,
                        H5T_class_t type_class, Handle& type) const {
    Handle attribute = attribute_handle(H5Aopen(object, attr.c_str(), H5P_DEFAULT));
    const std::string label = "attribute '" + attr + "' on " + where;
    if (!attribute.valid()) fail("cannot open " + label);
    type = type_handle(H5Aget_type(attribute));
    const H5T_class_t found = H5Tget_class(type);
    if (found != type_class)
      fail(label + " must be " +
           (type_class == H5T_STRING ? "a string" : type_class == H5T_FLOAT ? "a floating-point number" : "an integer") +
           ", found " + class_name(found));
    const Handle space = space_handle(H5Aget_space(attribute));
    const hssize_t count = H5Sget_simple_extent_npoints(space);
    if (count != 1) fail(label + " must be a single value, found " + std::to_string(count));
    return attribute;
  }

  bool has_attribute(hid_t object, const std::string& attr) const {
    return H5Aexists(object, attr.c_str()) > 0;
  }

  int int_attribute(hid_t object, const std::string& where, const std::string& attr,
                    int fallback) const {
    if (!has_attribute(object, attr)) return fallback;
    Handle type;
    const Handle attribute = open_attribute(object, where, attr, H5T_INTEGER, type);
    long long value = 0;
    if (H5Aread(attribute, H5T_NATIVE_LLONG, &value) < 0)
      fail("cannot read attribute '" + attr + "' on " + where);
    if (value < -1000000 || value > 1000000)
      fail("attribute '" + attr + "' on " + where + " is out of range: " + std::to_string(value));
    return static_cast<int>(value);
  }

  // A finite floating-point attribute; empty when absent.
  std::optional<double> double_attribute(hid_t object, const std::string& where, const std::string& attr) const {
    if (!has_attribute(object, attr)) return std::nullopt;
    Handle type;
    const Handle attribute = open_attribute(object, where, attr, H5T_FLOAT, type);
    double value = 0.0;
    if (H5Aread(attribute, H5T_NATIVE_DOUBLE, &value) < 0) fail("cannot read attribute '" + attr + "' on " + where);
    if (!std::isfinite(value)) fail("attribute '" + attr + "' on " + where + " is not finite");
    return value;
  }

  // Fixed- and variable-length strings, ASCII or UTF-8; empty when absent.
  std::string string_attribute(hid_t object, const std::string& where,
                               const std::string& attr) const {
    if (!has_attribute(object, attr)) return "";
    Handle type;
    const Handle attribute = open_attribute(object, where, attr, H5T_STRING, type);
    const std::string label = "attribute '" + attr + "' on " + where;
    if (H5Tis_variable_str(type) > 0) {
      // The memory type must match the stored character set; HDF5 does not convert between them.
      const Handle memory_type = type_handle(H5Tcopy(H5T_C_S1));
      H5Tset_size(memory_type, H5T_VARIABLE);
      H5Tset_cset(memory_type, H5Tget_cset(type));
      char* text = nullptr;
      if (H5Aread(attribute, memory_type, &text) < 0) fail("cannot read " + label);
      std::string value = text ? text : "";
      const Handle space = space_handle(H5Aget_space(attribute));
      H5Dvlen_reclaim(memory_type, space, H5P_DEFAULT, &text);
      return value;
    }
    const std::size_t size = H5Tget_size(type);
    // A damaged type can declare any length: no more than the attribute stores.
    if (size > H5Aget_storage_size(attribute)) fail("cannot read " + label);
    std::string value(size, '\0');
    if (size > 0 && H5Aread(attribute, type, value.data()) < 0) fail("cannot read " + label);
    value.resize(std::strlen(value.c_str()));  // null-terminated or null-padded
    if (H5Tget_strpad(type) == H5T_STR_SPACEPAD)
      value.erase(value.find_last_not_of(' ') + 1);
    return value;
  }

  hid_t file() const { return file_; }
  const std::string& path() const { return path_; }

  static std::size_t product(const std::vector<hsize_t>& dims) {
    std::size_t n = 1;
    for (hsize_t d : dims) n *= static_cast<std::size_t>(d);
    return n;
  }

 private:
  static std::string class_name(H5T_class_t c) {
    switch (c) {
      case H5T_INTEGER: return "integers";
      case H5T_FLOAT: return "floating-point numbers";
      case H5T_STRING: return "strings";
      case H5T_COMPOUND: return "a compound type";
      case H5T_ARRAY: return "an array type";
      case H5T_VLEN: return "a variable-length type";
      case H5T_ENUM: return "an enum type";
      default: return "an unsupported type";
    }
  }

  std::string path_;
  Handle file_;
};

// The optional /molecule/ghost [natom]: 1 for a ghost atom (its element's basis functions, no
// charge, no electrons), 0 for a real one.
void read_ghosts(const Hdf5Reader& in, Molecule& mol) {
  if (!in.exists("/molecule/ghost")) return;
  std::vector<hsize_t> dims;
  const std::vector<long long> ghost = in.read_integers("/molecule/ghost", 1, dims);
  if (dims[0] != mol.atoms.size())
    in.fail("dataset /molecule/ghost has length " + std::to_string(dims[0]) + ", but /molecule/atomic_numbers has " +
            std::to_string(mol.atoms.size()));
  for (std::size_t a = 0; a < mol.atoms.size(); ++a) {
    if (ghost[a] != 0 && ghost[a] != 1)
      in.fail("dataset /molecule/ghost must hold 0 or 1, found " + std::to_string(ghost[a]) + " at index " +
              std::to_string(a));
    mol.atoms[a].ghost = ghost[a] == 1;
  }
}

Molecule read_molecule(const Hdf5Reader& in) {
  std::vector<hsize_t> zdims, rdims;
  const std::vector<long long> Z = in.read_integers("/molecule/atomic_numbers", 1, zdims);
  const std::vector<double> r = in.read_doubles("/molecule/coordinates", 2, rdims);
  const std::size_t natom = zdims[0];
  if (natom == 0) in.fail("dataset /molecule/atomic_numbers is empty");
  if (rdims[0] != natom || rdims[1] != 3)
    in.fail("dataset /molecule/coordinates must have shape [" + std::to_string(natom) +
            "][3] (natom from /molecule/atomic_numbers), found " + dims_text(rdims));

  double scale = 1.0;  // to bohr
  {
    const Handle coordinates =
        dataset_handle(H5Dopen2(in.file(), "/molecule/coordinates", H5P_DEFAULT));
    const std::string units =
        in.string_attribute(coordinates, "/molecule/coordinates", "units");
    if (lowercase(units) == "angstrom") {
      scale = kBohrPerAngstrom;
    } else if (!units.empty() && lowercase(units) != "bohr") {
      in.fail("attribute 'units' on /molecule/coordinates must be \"bohr\" or \"angstrom\", "
              "found \"" + units + "\"");
    }
  }

  Molecule mol;
  mol.atoms.resize(natom);
  for (std::size_t a = 0; a < natom; ++a) {
    // Checked here, not left to validate(), so the message can name the dataset.
    if (Z[a] < 1 || Z[a] > kMaxAtomicNumber)
      in.fail("unknown element: atomic number " + std::to_string(Z[a]) +
              " in /molecule/atomic_numbers");
    mol.atoms[a].Z = static_cast<int>(Z[a]);
    for (int c = 0; c < 3; ++c) mol.atoms[a].r[c] = r[3 * a + c] * scale;
  }
  read_ghosts(in, mol);
  const Handle group = in.open_group("/molecule");
  mol.charge = in.int_attribute(group, "/molecule", "charge", 0);
  mol.multiplicity = in.int_attribute(group, "/molecule", "multiplicity", 1);
  mol.name = in.string_attribute(group, "/molecule", "name");
  return mol;
}

// One set of orbitals: /scf/mo_coefficients<suffix>, /scf/mo_energies<suffix> and the attribute
// <nocc_name> on /scf (suffix "" with nocc: RHF's or UHF's α; "_beta" with nocc_beta: UHF's β).
SpinOrbitals read_orbital_set(const Hdf5Reader& in, const std::string& suffix, const std::string& nocc_name) {
  const std::string coefficients = "/scf/mo_coefficients" + suffix, energies = "/scf/mo_energies" + suffix;
  std::vector<hsize_t> cdims, edims;
  const std::vector<double> C = in.read_doubles(coefficients, 2, cdims);
  const std::vector<double> eps = in.read_doubles(energies, 1, edims);
  const std::size_t nbf = cdims[0], nmo = cdims[1];
  if (nbf == 0 || nmo == 0) in.fail("dataset " + coefficients + " is empty");
  if (nmo > nbf)
    in.fail("dataset " + coefficients + " must have shape [nbf][nmo] with nmo <= nbf, found " + dims_text(cdims));
  if (edims[0] != nmo)
    in.fail("dataset " + energies + " has length " + std::to_string(edims[0]) + ", but " + coefficients + " has " +
            std::to_string(nmo) + " orbitals");
  in.require_finite(coefficients, C.data(), C.size());
  in.require_finite(energies, eps.data(), eps.size());

  const Handle group = in.open_group("/scf");
  if (!in.has_attribute(group, nocc_name)) in.fail("attribute '" + nocc_name + "' on /scf is missing");
  SpinOrbitals orbitals;
  orbitals.nocc = in.int_attribute(group, "/scf", nocc_name, 0);
  // A UHF β set may be empty (no β electrons); every other set has an occupied orbital.
  const int least = suffix.empty() ? 1 : 0;
  if (orbitals.nocc < least || static_cast<std::size_t>(orbitals.nocc) > nmo)
    in.fail("attribute '" + nocc_name + "' on /scf is " + std::to_string(orbitals.nocc) + ", outside " +
            std::to_string(least) + ".." + std::to_string(nmo));
  // The file is row-major [nbf][nmo]; Eigen's default storage is column-major.
  orbitals.C = Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic,
                                              Eigen::RowMajor>>(
      C.data(), static_cast<Eigen::Index>(nbf), static_cast<Eigen::Index>(nmo));
  orbitals.eps = Eigen::Map<const Eigen::VectorXd>(eps.data(), static_cast<Eigen::Index>(nmo));
  return orbitals;
}

// RHF orbitals, or UHF's when the β datasets are present too.
Orbitals read_orbitals(const Hdf5Reader& in) {
  Orbitals orbitals;
  static_cast<SpinOrbitals&>(orbitals) = read_orbital_set(in, "", "nocc");
  if (!in.exists("/scf/mo_coefficients_beta") && !in.exists("/scf/mo_energies_beta")) return orbitals;
  orbitals.beta = read_orbital_set(in, "_beta", "nocc_beta");
  if (orbitals.beta->C.rows() != orbitals.C.rows() || orbitals.beta->C.cols() != orbitals.C.cols())
    in.fail("dataset /scf/mo_coefficients_beta must have the shape of /scf/mo_coefficients, " +
            dims_text({hsize_t(orbitals.C.rows()), hsize_t(orbitals.C.cols())}));
  return orbitals;
}

// Rows [first, first + count) of /df/B, read in the stored precision and checked finite.
template <typename Real>
void read_df_rows(const std::string& path, std::size_t first, std::size_t count, Real* out) {
  const Hdf5Reader in(path);
  const std::string name = "/df/B";
  std::vector<hsize_t> dims;
  const Handle dataset = in.open_dataset(name, 3, H5T_FLOAT, dims);
  const std::array<hsize_t, 3> start{first, 0, 0}, extent{count, dims[1], dims[2]};
  const Handle file_space = space_handle(H5Dget_space(dataset));
  const Handle memory_space = space_handle(H5Screate_simple(3, extent.data(), nullptr));
  const hid_t memory_type = std::is_same_v<Real, float> ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
  const std::size_t values = count * dims[1] * dims[2];
  if (values == 0) return;
  if (H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start.data(), nullptr, extent.data(), nullptr) < 0 ||
      H5Dread(dataset, memory_type, memory_space, file_space, H5P_DEFAULT, out) < 0)
    in.fail("cannot read dataset " + name);
  for (std::size_t k = 0; k < values; ++k)
    if (!std::isfinite(out[k]))
      in.fail("dataset " + name + " holds a non-finite value (" + std::to_string(out[k]) + ") at flat index " +
              std::to_string(first * dims[1] * dims[2] + k));
}

// The /df group's sizes and orbital energies; B itself is read later, each rank its rows.
GivenBiaTensor read_df(const Hdf5Reader& in) {
  std::vector<hsize_t> bdims, odims, vdims;
  GivenBiaTensor df;
  {
    const Handle dataset = in.open_dataset("/df/B", 3, H5T_FLOAT, bdims);
    df.nocc = bdims[0];
    df.nvir = bdims[1];
    df.naux = bdims[2];
    if (df.nocc == 0 || df.nvir == 0 || df.naux == 0)
      in.fail("dataset /df/B must have shape [nocc][nvir][naux] with no empty dimension, found " +
              dims_text(bdims));
    // Keep the stored precision: a float32 tensor stays float32 (half the memory).
    const Handle type = type_handle(H5Dget_type(dataset));
    df.fp32 = H5Tget_class(type) == H5T_FLOAT && H5Tget_size(type) <= 4;
  }
  df.eps_occ = in.read_doubles("/df/eps_occ", 1, odims);
  df.eps_vir = in.read_doubles("/df/eps_vir", 1, vdims);
  if (odims[0] != df.nocc)
    in.fail("dataset /df/eps_occ has length " + std::to_string(odims[0]) + ", but /df/B has nocc " +
            std::to_string(df.nocc));
  if (vdims[0] != df.nvir)
    in.fail("dataset /df/eps_vir has length " + std::to_string(vdims[0]) + ", but /df/B has nvir " +
            std::to_string(df.nvir));
  in.require_finite("/df/eps_occ", df.eps_occ.data(), df.eps_occ.size());
  in.require_finite("/df/eps_vir", df.eps_vir.data(), df.eps_vir.size());
  df.read_rows = [path = in.path(), fp32 = df.fp32](std::size_t first, std::size_t count, void* out) {
    if (fp32)
      read_df_rows(path, first, count, static_cast<float*>(out));
    else
      read_df_rows(path, first, count, static_cast<double*>(out));
  };
  return df;
}

// ---------------------------------------------------------------------------------------------
// Writing. Helpers throw std::runtime_error naming the object; OutputFiles turns that into one
// InputError naming the file.

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

Handle create_group(hid_t parent, const std::string& name, bool keep_attribute_order = false) {
  if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0) {
    Handle group = group_handle(H5Gopen2(parent, name.c_str(), H5P_DEFAULT));
    check(group.valid(), "cannot open group " + name);
    return group;
  }
  const Handle gcpl = plist_handle(H5Pcreate(H5P_GROUP_CREATE));
  // Timings are listed in the order the stages ran, not alphabetically.
  if (keep_attribute_order)
    H5Pset_attr_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  Handle group = group_handle(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT));
  check(group.valid(), "cannot create group " + name);
  return group;
}

void write_attribute(hid_t object, const std::string& name, hid_t file_type, hid_t memory_type,
                     const void* value) {
  const Handle space = space_handle(H5Screate(H5S_SCALAR));
  const Handle attribute = attribute_handle(
      H5Acreate2(object, name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT));
  check(attribute.valid() && H5Awrite(attribute, memory_type, value) >= 0,
        "cannot write attribute '" + name + "'");
}

void write_int_attribute(hid_t object, const std::string& name, int value) {
  write_attribute(object, name, H5T_STD_I32LE, H5T_NATIVE_INT, &value);
}

void write_double_attribute(hid_t object, const std::string& name, double value) {
  write_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

// Variable-length UTF-8: h5py reads it back as str, and the reader above accepts it.
void write_string_attribute(hid_t object, const std::string& name, const std::string& value) {
  const Handle type = type_handle(H5Tcopy(H5T_C_S1));
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const char* text = value.c_str();
  write_attribute(object, name, type, type, &text);
}

void write_dataset(hid_t parent, const std::string& name, const std::vector<hsize_t>& dims,
                   hid_t file_type, hid_t memory_type, const void* data) {
  const Handle space =
      space_handle(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  const Handle dataset = dataset_handle(
      H5Dcreate2(parent, name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  check(dataset.valid(), "cannot create dataset " + name);
  std::size_t count = 1;
  for (hsize_t d : dims) count *= d;
  if (count > 0)
    check(H5Dwrite(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0,
          "cannot write dataset " + name);
}

// Root attributes basis / df_basis / jk_basis; empty names are "not given" and not written.
void write_basis_names(hid_t file, const std::string& basis, const std::string& df_basis,
                       const std::string& jk_basis) {
  for (const auto& [attr, value] : {std::pair<const char*, const std::string&>{"basis", basis},
                                    {"df_basis", df_basis},
                                    {"jk_basis", jk_basis}})
    if (!value.empty()) write_string_attribute(file, attr, value);
}

// /molecule in the input layout, coordinates in bohr (so no units attribute).
void write_molecule(hid_t file, const Molecule& mol) {
  const Handle group = create_group(file, "/molecule");
  const hsize_t natom = mol.atoms.size();
  std::vector<int> Z;
  std::vector<double> r;
  for (const Atom& atom : mol.atoms) {
    Z.push_back(atom.Z);
    r.insert(r.end(), atom.r.begin(), atom.r.end());
  }
  write_dataset(group, "atomic_numbers", {natom}, H5T_STD_I32LE, H5T_NATIVE_INT, Z.data());
  write_dataset(group, "coordinates", {natom, 3}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, r.data());
  write_int_attribute(group, "charge", mol.charge);
  write_int_attribute(group, "multiplicity", mol.multiplicity);
  if (!mol.name.empty()) write_string_attribute(group, "name", mol.name);
}

// /scf/mo_coefficients [nbf][nmo] row-major, /scf/mo_energies, attribute nocc; for UHF the β set
// beside them as /scf/mo_coefficients_beta, /scf/mo_energies_beta, attribute nocc_beta.
void write_orbitals(hid_t file, const Orbitals& orbitals) {
  const Handle group = create_group(file, "/scf");
  for (int s = 0; s < orbitals.spin_count(); ++s) {
    const SpinOrbitals& set = orbitals.spin(s);
    const std::string suffix = s == 0 ? "" : "_beta";
    const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> C = set.C;
    const hsize_t nbf = static_cast<hsize_t>(C.rows()), nmo = static_cast<hsize_t>(C.cols());
    check(static_cast<hsize_t>(set.eps.size()) == nmo,
          "orbital energies and coefficients disagree on the number of orbitals");
    write_dataset(group, "mo_coefficients" + suffix, {nbf, nmo}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, C.data());
    write_dataset(group, "mo_energies" + suffix, {nmo}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, set.eps.data());
    write_int_attribute(group, "nocc" + suffix, set.nocc);
  }
}

// /scf/iterations: compound {iteration int32, energy, delta_e, gradient_rms float64}.
void write_scf_iterations(hid_t file, const std::vector<ScfIteration>& iterations) {
  const Handle group = create_group(file, "/scf");
  const Handle memory_type = type_handle(H5Tcreate(H5T_COMPOUND, sizeof(ScfIteration)));
  H5Tinsert(memory_type, "iteration", HOFFSET(ScfIteration, iteration), H5T_NATIVE_INT);
  H5Tinsert(memory_type, "energy", HOFFSET(ScfIteration, energy), H5T_NATIVE_DOUBLE);
  H5Tinsert(memory_type, "delta_e", HOFFSET(ScfIteration, delta_e), H5T_NATIVE_DOUBLE);
  H5Tinsert(memory_type, "gradient_rms", HOFFSET(ScfIteration, gradient_rms), H5T_NATIVE_DOUBLE);
  // Packed in the file: no compiler padding on disk.
  const Handle file_type = type_handle(H5Tcreate(H5T_COMPOUND, 4 + 3 * 8));
  H5Tinsert(file_type, "iteration", 0, H5T_STD_I32LE);
  H5Tinsert(file_type, "energy", 4, H5T_IEEE_F64LE);
  H5Tinsert(file_type, "delta_e", 12, H5T_IEEE_F64LE);
  H5Tinsert(file_type, "gradient_rms", 20, H5T_IEEE_F64LE);
  write_dataset(group, "iterations", {iterations.size()}, file_type, memory_type,
                iterations.data());
}

void write_df(hid_t file, const BiaTensor& df) {
  check(df.B64.empty() != df.B32.empty(), "the DF tensor must be stored in exactly one precision");
  const std::size_t count = df.nocc * df.nvir * df.naux;
  check((df.B64.empty() ? df.B32.size() : df.B64.size()) == count &&
            df.eps_occ.size() == df.nocc && df.eps_vir.size() == df.nvir,
        "the DF tensor sizes are inconsistent");
  const Handle group = create_group(file, "/df");
  const std::vector<hsize_t> dims = {df.nocc, df.nvir, df.naux};
  if (df.B64.empty())
    write_dataset(group, "B", dims, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, df.B32.data());
  else
    write_dataset(group, "B", dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, df.B64.data());
  write_dataset(group, "eps_occ", {df.nocc}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                df.eps_occ.data());
  write_dataset(group, "eps_vir", {df.nvir}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                df.eps_vir.data());
}

// Creates the file at `path` (OutputFiles makes that a temporary) and fills it.
void write_file(const std::string& path, const std::function<void(hid_t)>& body) {
  silence_hdf5_errors();
  errno = 0;
  Handle file = file_handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  check(file.valid(), errno != 0 ? std::strerror(errno) : "HDF5 cannot create the file");
  body(file);
  check(file.close(), "cannot finish the file (disk full?)");
}

RunInput read_layout(const Hdf5Reader& in);

}  // namespace

void require_hdf5_survives(const std::string& path) {
  const pid_t child = fork();
  if (child == 0) {
    // A crash here is the answer, not news: it ends the child quietly, whatever handlers
    // (sanitizers, OpenMPI) the process had.
    for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) std::signal(signal, SIG_DFL);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO);
    alarm(kWalkSeconds);
    silence_hdf5_errors();
    const Handle file = file_handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
    if (file.valid())
      H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, touch_object, nullptr,
                H5O_INFO_BASIC | H5O_INFO_NUM_ATTRS);
    try {
      read_layout(Hdf5Reader(path, true));
    } catch (...) {  // the parent reads again and reports
    }
    _exit(0);
  }
  if (child < 0) return;  // no check: read as before
  int status = 0;
  pid_t waited;
  // Signal handlers of the process (libFuzzer's timer, for one) may interrupt the wait.
  while ((waited = waitpid(child, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited != child) return;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw InputError("'" + path + "' is damaged: the HDF5 library " +
                     (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? "loops" : "crashes") +
                     " reading it");
}

RunInput read_hdf5_input(const std::string& path) { return read_layout(Hdf5Reader(path)); }

namespace {

RunInput read_layout(const Hdf5Reader& in) {
  RunInput input;
  input.path = in.path();
  const bool has_molecule = in.exists("/molecule"), has_df = in.exists("/df");
  if (!has_molecule && !has_df)
    in.fail("neither /molecule nor /df found (see docs/input-format.md)");
  if (has_molecule) input.molecule = read_molecule(in);
  if (has_df) input.df = read_df(in);
  const Handle root = group_handle(H5Gopen2(in.file(), "/", H5P_DEFAULT));
  input.basis = in.string_attribute(root, "/", "basis");
  input.df_basis = in.string_attribute(root, "/", "df_basis");
  input.jk_basis = in.string_attribute(root, "/", "jk_basis");
  // A results file has /scf/iterations but orbitals only when the run made some.
  if (in.exists("/scf/mo_coefficients") || in.exists("/scf/mo_energies")) {
    if (!has_molecule) in.fail("/scf orbitals need a /molecule group");
    input.orbitals = read_orbitals(in);
    input.e_scf = in.double_attribute(in.open_group("/scf"), "/scf", "e_scf");
  }
  return input;
}

}  // namespace

void write_hdf5_input(const std::string& path, const Molecule& mol, const std::string& basis,
                      const std::string& df_basis, const std::string& jk_basis) {
  write_file(path, [&](hid_t file) {
    write_molecule(file, mol);
    write_basis_names(file, basis, df_basis, jk_basis);
  });
}

void write_hdf5_df_input(const std::string& path, const BiaTensor& df) {
  write_file(path, [&](hid_t file) { write_df(file, df); });
}

void write_hdf5_results(const std::string& path, const RunResult& r) {
  write_file(path, [&](hid_t file) {
    write_string_attribute(file, "molecule", r.molecule);
    write_basis_names(file, r.basis, r.df_basis, r.jk_basis);
    write_string_attribute(file, "scf_type", scf_type_name(r));
    write_string_attribute(file, "reference", name_of(r.reference));
    write_string_attribute(file, "backend", backend_name(r));
    write_string_attribute(file, "precision", name_of(r.precision));
    for (const auto& [name, value] :
         {std::pair<const char*, int>{"natom", r.natom}, {"nbf", r.nbf}, {"nmo", r.nmo},
          {"naux", r.naux}, {"naux_jk", r.naux_jk}, {"nocc", r.nocc}, {"nvir", r.nvir},
          {"nfrozen", r.nfrozen}, {"threads", r.threads}})
      write_int_attribute(file, name, value);
    for (const auto& [name, value] :
         {std::pair<const char*, double>{"e_nuc", r.e_nuc}, {"e_scf", r.e_scf}, {"e_ss", r.e_ss},
          {"e_os", r.e_os}, {"e_corr", r.e_corr}, {"e_scs_corr", r.e_scs_corr},
          {"e_total", r.e_total}})
      write_double_attribute(file, name, value);
    if (r.unrestricted()) {
      write_int_attribute(file, "nocc_beta", r.nocc_beta);
      write_int_attribute(file, "nvir_beta", r.nvir_beta);
      for (const auto& [name, value] : {std::pair<const char*, double>{"s2", r.s2}, {"e_aa", r.e_aa},
                                        {"e_bb", r.e_bb}, {"e_ab", r.e_os}})
        write_double_attribute(file, name, value);
    }

    // Stage wall times and floors in the order the stages ran; "total" last.
    const Handle timings = create_group(file, "/timings", true);
    const Handle floors = create_group(file, "/floors", true);
    for (const StageTiming& stage : r.stages) {
      write_double_attribute(timings, stage.name, stage.seconds);
      if (stage.floor_seconds > 0.0) write_double_attribute(floors, stage.name, stage.floor_seconds);
      for (const StagePart& part : stage.parts) write_double_attribute(timings, stage.part_key(part), part.seconds);
    }
    write_double_attribute(timings, "total", r.total_seconds);

    if (!r.scf_iterations.empty()) write_scf_iterations(file, r.scf_iterations);
    if (r.gradient) {  // natom × 3, Eh/bohr, as the JSON's
      const Eigen::Matrix<double, Eigen::Dynamic, 3, Eigen::RowMajor> gradient = *r.gradient;
      write_dataset(file, "gradient", {static_cast<hsize_t>(gradient.rows()), 3}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                    gradient.data());
    }
    if (r.mp2_dipole_moment)  // e·bohr about the origin, as the JSON's
      write_dataset(file, "mp2_dipole_moment", {3}, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, r.mp2_dipole_moment->data());
    if (r.orbitals) write_orbitals(file, *r.orbitals);
    if (r.geometry) write_molecule(file, *r.geometry);
  });
}

}  // namespace dfmp2
