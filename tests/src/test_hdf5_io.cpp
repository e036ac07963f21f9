#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <hdf5.h>
#include <signal.h>
#include <sys/time.h>

#include "src/common/errors.hpp"
#include "src/io/hdf5_io.hpp"
#include "src/io/output_file.hpp"
#include "src/molecule/molecule.hpp"
#include "tests/src/temp_dir.hpp"

using namespace dfmp2;

namespace {

Molecule water() {
  Molecule mol;
  mol.name = "water monomer";
  mol.charge = 0;
  mol.multiplicity = 1;
  mol.atoms = {{8, {0.0, 0.0, 0.1173}}, {1, {0.0, 1.4309, -0.4692}}, {1, {0.0, -1.4309, -0.4692}}};
  return mol;
}

// Raw HDF5 writing, for layouts our writers would never produce.
struct RawFile {
  hid_t id;
  explicit RawFile(const std::string& path)
      : id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)) {
    REQUIRE(id >= 0);
  }
  ~RawFile() { H5Fclose(id); }
  void group(const std::string& name) const {
    const hid_t g = H5Gcreate2(id, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(g >= 0);
    H5Gclose(g);
  }
  template <typename T>
  void dataset(const std::string& name, const std::vector<hsize_t>& dims, hid_t type,
               const std::vector<T>& data) const {
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t d = H5Dcreate2(id, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT,
                               H5P_DEFAULT);
    REQUIRE(d >= 0);
    REQUIRE(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0);
    H5Dclose(d);
    H5Sclose(space);
  }
  // Fixed-length, space-padded: the reader must accept it as well as variable-length strings.
  void string_attribute(const std::string& object, const std::string& name,
                        const std::string& value) const {
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, value.size() + 3);
    H5Tset_strpad(type, H5T_STR_SPACEPAD);
    const std::string padded = value + "   ";
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate_by_name(id, object.c_str(), name.c_str(), type, space, H5P_DEFAULT,
                                      H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(a >= 0);
    REQUIRE(H5Awrite(a, type, padded.data()) >= 0);
    H5Aclose(a);
    H5Sclose(space);
    H5Tclose(type);
  }
  void int_attribute(const std::string& object, const std::string& name, int value) const {
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t a = H5Acreate_by_name(id, object.c_str(), name.c_str(), H5T_NATIVE_INT, space,
                                      H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(a >= 0);
    REQUIRE(H5Awrite(a, H5T_NATIVE_INT, &value) >= 0);
    H5Aclose(a);
    H5Sclose(space);
  }
};

// A raw file holding a valid one-atom /molecule, to be broken by `edit` before closing.
std::string raw_input(const TempDir& dir, const std::string& name,
                      const std::function<void(RawFile&)>& edit = {}) {
  const std::string path = dir.path(name);
  RawFile f(path);
  f.group("/molecule");
  if (edit) edit(f);
  return path;
}

MemoryBudget& test_budget() {
  static MemoryBudget budget(std::size_t(1) << 30);
  return budget;
}

BiaTensor small_df(bool single_precision) {
  BiaTensor df;
  df.nocc = 2;
  df.nvir = 3;
  df.naux = 4;
  const std::size_t count = df.nocc * df.nvir * df.naux;
  if (single_precision)
    df.B32 = test_budget().allocate<float>(count, "B");
  else
    df.B64 = test_budget().allocate<double>(count, "B");
  for (std::size_t k = 0; k < count; ++k) {
    const double value = 0.01 * static_cast<double>(k) - 0.1;
    if (single_precision)
      df.B32[k] = static_cast<float>(value);
    else
      df.B64[k] = value;
  }
  df.eps_occ = {-1.5, -0.5};
  df.eps_vir = {0.25, 0.75, 1.25};
  return df;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool any_temporary_in(const std::string& directory) {
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    if (entry.path().filename().string().find(".tmp-") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("write_hdf5_input then read_hdf5_input gives the same molecule and basis names") {
  TempDir dir;
  const std::string path = dir.path("water.h5");
  Molecule mol = water();
  mol.charge = 2;
  mol.multiplicity = 3;
  write_hdf5_input(path, mol, "cc-pvdz", "cc-pvdz-ri", "");
  CHECK_FALSE(any_temporary_in(dir.path("")));

  const RunInput input = read_hdf5_input(path);
  CHECK(input.path == path);
  REQUIRE(input.molecule);
  CHECK(input.molecule->name == "water monomer");
  CHECK(input.molecule->charge == 2);
  CHECK(input.molecule->multiplicity == 3);
  REQUIRE(input.molecule->atoms.size() == 3);
  for (std::size_t a = 0; a < 3; ++a) {
    CHECK(input.molecule->atoms[a].Z == mol.atoms[a].Z);
    CHECK(input.molecule->atoms[a].r == mol.atoms[a].r);  // bit-identical, stored in bohr
  }
  CHECK(input.basis == "cc-pvdz");
  CHECK(input.df_basis == "cc-pvdz-ri");
  CHECK(input.jk_basis.empty());
  CHECK_FALSE(input.orbitals);
  CHECK_FALSE(input.df);
}

TEST_CASE("coordinates with units=\"Angstrom\" are converted, and defaults apply to charge") {
  TempDir dir;
  const std::string path = raw_input(dir, "a.h5", [](RawFile& f) {
    f.dataset<int>("/molecule/atomic_numbers", {2}, H5T_NATIVE_INT, {1, 1});
    f.dataset<double>("/molecule/coordinates", {2, 3}, H5T_NATIVE_DOUBLE,
                      {0, 0, 0, 0, 0, 0.74});
    f.string_attribute("/molecule/coordinates", "units", "Angstrom");
    f.string_attribute("/molecule", "name", "H2");
    f.string_attribute("/", "basis", "sto-3g");
  });
  const RunInput input = read_hdf5_input(path);
  REQUIRE(input.molecule);
  CHECK(input.molecule->atoms[1].r[2] == Approx(0.74 * kBohrPerAngstrom).epsilon(1e-15));
  CHECK(input.molecule->charge == 0);
  CHECK(input.molecule->multiplicity == 1);
  CHECK(input.molecule->name == "H2");  // fixed-length, space-padded string
  CHECK(input.basis == "sto-3g");
}

TEST_CASE("orbitals survive write_hdf5_results → read_hdf5_input") {
  TempDir dir;
  const std::string path = dir.path("results.h5");
  RunResult result;
  result.molecule = "water monomer";
  result.geometry = water();
  result.basis = "cc-pvdz";
  result.df_basis = "cc-pvdz-ri";
  result.jk_basis = "cc-pvdz-jkfit";
  result.scf_type = ScfType::df;
  result.backend = kernels::Backend::fused;
  result.precision = kernels::Precision::fp64;
  result.natom = 3;
  result.nbf = 4;
  result.nmo = 3;
  result.nocc = 2;
  result.nvir = 1;
  result.e_total = -76.25;
  result.scf_iterations = {{1, -75.9, -75.9, 0.1}, {2, -76.0, -0.1, 1e-3}};
  result.stages = {{"integrals", 0.5, 0.25, 0.0, 0, {}}, {"scf", 1.25, 0.0, 0.0, 0, {}}};
  result.total_seconds = 2.0;
  Orbitals orbitals;
  orbitals.C.resize(4, 3);
  for (int i = 0; i < 4; ++i)
    for (int p = 0; p < 3; ++p) orbitals.C(i, p) = 10.0 * i + p + 0.125;  // not symmetric
  orbitals.eps = Eigen::Vector3d(-20.5, -1.25, 0.5);
  orbitals.nocc = 2;
  result.orbitals = orbitals;
  write_hdf5_results(path, result);
  CHECK_FALSE(any_temporary_in(dir.path("")));

  const RunInput input = read_hdf5_input(path);
  REQUIRE(input.orbitals);
  CHECK(input.orbitals->C == orbitals.C);
  CHECK(input.orbitals->eps == orbitals.eps);
  CHECK(input.orbitals->nocc == 2);
  REQUIRE(input.molecule);
  CHECK(input.molecule->atoms.size() == 3);
  CHECK(input.molecule->name == "water monomer");
  CHECK(input.basis == "cc-pvdz");
  CHECK(input.jk_basis == "cc-pvdz-jkfit");

  // A few of the result attributes, read back raw as a script would.
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(file >= 0);
  double e_total = 0.0, scf_seconds = 0.0;
  const hid_t a = H5Aopen(file, "e_total", H5P_DEFAULT);
  CHECK(H5Aread(a, H5T_NATIVE_DOUBLE, &e_total) >= 0);
  H5Aclose(a);
  CHECK(e_total == -76.25);
  const hid_t t = H5Aopen_by_name(file, "/timings", "scf", H5P_DEFAULT, H5P_DEFAULT);
  CHECK(H5Aread(t, H5T_NATIVE_DOUBLE, &scf_seconds) >= 0);
  H5Aclose(t);
  CHECK(scf_seconds == 1.25);
  CHECK(H5Aexists_by_name(file, "/timings", "total", H5P_DEFAULT) > 0);
  CHECK(H5Aexists_by_name(file, "/floors", "integrals", H5P_DEFAULT) > 0);
  CHECK(H5Aexists_by_name(file, "/floors", "scf", H5P_DEFAULT) == 0);  // no floor: none written
  const hid_t it = H5Dopen2(file, "/scf/iterations", H5P_DEFAULT);
  REQUIRE(it >= 0);
  const hid_t space = H5Dget_space(it);
  CHECK(H5Sget_simple_extent_npoints(space) == 2);
  H5Sclose(space);
  H5Dclose(it);
  H5Fclose(file);
}

TEST_CASE("a results file without orbitals or geometry is not an input") {
  TempDir dir;
  const std::string path = dir.path("energy.h5");
  RunResult result;
  write_hdf5_results(path, result);
  CHECK_THROWS_WITH(read_hdf5_input(path), Catch::Contains("neither /molecule nor /df"));
}

TEST_CASE("DF inputs round-trip in the precision they were stored in") {
  TempDir dir;
  for (const bool single : {false, true}) {
    const std::string path = dir.path(single ? "df32.h5" : "df64.h5");
    const BiaTensor df = small_df(single);
    write_hdf5_df_input(path, df);
    const RunInput input = read_hdf5_input(path);
    CHECK_FALSE(input.molecule);
    REQUIRE(input.df);
    CHECK(input.df->nocc == 2);
    CHECK(input.df->nvir == 3);
    CHECK(input.df->naux == 4);
    CHECK(input.df->fp32 == single);
    // Rows are read on demand, each rank its own: read the second one alone.
    const std::size_t row = df.nvir * df.naux;
    if (single) {
      std::vector<float> second(row);
      input.df->read_rows(1, 1, second.data());
      CHECK(std::equal(second.begin(), second.end(), df.B32.begin() + row));
    } else {
      std::vector<double> second(row);
      input.df->read_rows(1, 1, second.data());
      CHECK(std::equal(second.begin(), second.end(), df.B64.begin() + row));
    }
    CHECK(input.df->eps_occ == df.eps_occ);
    CHECK(input.df->eps_vir == df.eps_vir);
  }
}

TEST_CASE("reading leaves the input file byte-for-byte and time-for-time unchanged") {
  TempDir dir;
  const std::string path = dir.path("water.h5");
  write_hdf5_input(path, water(), "cc-pvdz", "", "");
  const std::string before = file_bytes(path);
  const auto mtime = std::filesystem::last_write_time(path);
  std::filesystem::permissions(path, std::filesystem::perms::owner_read,
                               std::filesystem::perm_options::replace);
  CHECK_NOTHROW(read_hdf5_input(path));  // read-only open works on a read-only file
  CHECK(file_bytes(path) == before);
  CHECK(std::filesystem::last_write_time(path) == mtime);
}

TEST_CASE("bad HDF5 inputs are rejected with one line naming the file and the problem") {
  TempDir dir;
  const std::vector<int> z1 = {1};
  const std::vector<double> r1 = {0, 0, 0};

  SECTION("missing file") {
    const std::string path = dir.path("absent.h5");
    CHECK_THROWS_WITH(read_hdf5_input(path), "cannot open '" + path + "'");
  }
  SECTION("not an HDF5 file") {
    const std::string path = dir.write("text.h5", "3\nwater\nO 0 0 0\n");
    CHECK_THROWS_WITH(read_hdf5_input(path), "'" + path + "' is not an HDF5 file");
  }
  SECTION("neither /molecule nor /df") {
    const std::string path = dir.path("empty.h5");
    { RawFile f(path); }
    CHECK_THROWS_WITH(read_hdf5_input(path), Catch::Contains(path) &&
                                                 Catch::Contains("neither /molecule nor /df"));
  }
  SECTION("missing coordinates") {
    const std::string path = raw_input(dir, "nocoord.h5", [&](RawFile& f) {
      f.dataset("/molecule/atomic_numbers", {1}, H5T_NATIVE_INT, z1);
    });
    CHECK_THROWS_WITH(read_hdf5_input(path),
                      Catch::Contains(path) &&
                          Catch::Contains("dataset /molecule/coordinates is missing"));
  }
  SECTION("coordinates not [natom][3]") {
    const std::string path = raw_input(dir, "shape.h5", [&](RawFile& f) {
      f.dataset("/molecule/atomic_numbers", {1}, H5T_NATIVE_INT, z1);
      f.dataset<double>("/molecule/coordinates", {1, 2}, H5T_NATIVE_DOUBLE, {0, 0});
    });
    CHECK_THROWS_WITH(read_hdf5_input(path), Catch::Contains("/molecule/coordinates must have "
                                                             "shape [1][3]") &&
                                                 Catch::Contains("found [1][2]"));
  }
  SECTION("coordinates of the wrong rank") {
    const std::string path = raw_input(dir, "rank.h5", [&](RawFile& f) {
      f.dataset("/molecule/atomic_numbers", {1}, H5T_NATIVE_INT, z1);
      f.dataset("/molecule/coordinates", {3}, H5T_NATIVE_DOUBLE, r1);
    });
    CHECK_THROWS_WITH(read_hdf5_input(path), Catch::Contains("must have rank 2, found rank 1"));
  }
  SECTION("atomic numbers as floating point") {
    const std::string path = raw_input(dir, "zfloat.h5", [&](RawFile& f) {
      f.dataset<double>("/molecule/atomic_numbers", {1}, H5T_NATIVE_DOUBLE, {1.0});
      f.dataset("/molecule/coordinates", {1, 3}, H5T_NATIVE_DOUBLE, r1);
    });
    CHECK_THROWS_WITH(read_hdf5_input(path),
                      Catch::Contains("/molecule/atomic_numbers must hold integers"));
  }
  SECTION("atomic number 0") {
    const std::string path = raw_input(dir, "z0.h5", [&](RawFile& f) {
      f.dataset<int>("/molecule/atomic_numbers", {1}, H5T_NATIVE_INT, {0});
      f.dataset("/molecule/coordinates", {1, 3}, H5T_NATIVE_DOUBLE, r1);
    });
    CHECK_THROWS_WITH(read_hdf5_input(path),
                      Catch::Contains("unknown element: atomic number 0 in "
                                      "/molecule/atomic_numbers"));
  }
  SECTION("unknown units") {
    const std::string path = raw_input(dir, "units.h5", [&](RawFile& f) {
      f.dataset("/molecule/atomic_numbers", {1}, H5T_NATIVE_INT, z1);
      f.dataset("/molecule/coordinates", {1, 3}, H5T_NATIVE_DOUBLE, r1);
      f.string_attribute("/molecule/coordinates", "units", "nm");
    });
    CHECK_THROWS_WITH(read_hdf5_input(path), Catch::Contains("found \"nm\""));
  }
  SECTION("charge stored as a string") {
    const std::string path = raw_input(dir, "charge.h5", [&](RawFile& f) {
      f.dataset("/molecule/atomic_numbers", {1}, H5T_NATIVE_INT, z1);
      f.dataset("/molecule/coordinates", {1, 3}, H5T_NATIVE_DOUBLE, r1);
      f.string_attribute("/molecule", "charge", "+1");
    });
    CHECK_THROWS_WITH(read_hdf5_input(path),
                      Catch::Contains("attribute 'charge' on /molecule must be an integer"));
  }
  SECTION("nocc out of range in /scf") {
    const std::string path = raw_input(dir, "nocc.h5", [&](RawFile& f) {
      f.dataset("/molecule/atomic_numbers", {1}, H5T_NATIVE_INT, z1);
      f.dataset("/molecule/coordinates", {1, 3}, H5T_NATIVE_DOUBLE, r1);
      f.group("/scf");
      f.dataset<double>("/scf/mo_coefficients", {2, 2}, H5T_NATIVE_DOUBLE, {1, 0, 0, 1});
      f.dataset<double>("/scf/mo_energies", {2}, H5T_NATIVE_DOUBLE, {-0.5, 0.5});
      f.int_attribute("/scf", "nocc", 3);
    });
    CHECK_THROWS_WITH(read_hdf5_input(path),
                      Catch::Contains("attribute 'nocc' on /scf is 3, outside 1..2"));
  }
  SECTION("eps_occ length does not match B") {
    BiaTensor df = small_df(false);
    const std::string path = dir.path("epsocc.h5");
    {
      RawFile f(path);
      f.group("/df");
      f.dataset("/df/B", {df.nocc, df.nvir, df.naux}, H5T_NATIVE_DOUBLE,
                std::vector<double>(df.B64.begin(), df.B64.end()));
      f.dataset<double>("/df/eps_occ", {3}, H5T_NATIVE_DOUBLE, {-2, -1.5, -0.5});
      f.dataset("/df/eps_vir", {df.nvir}, H5T_NATIVE_DOUBLE, df.eps_vir);
    }
    CHECK_THROWS_WITH(read_hdf5_input(path),
                      Catch::Contains(path) &&
                          Catch::Contains("/df/eps_occ has length 3, but /df/B has nocc 2"));
  }
  SECTION("NaN in B, float64 and float32") {
    BiaTensor df = small_df(false);
    df.B64[5] = std::numeric_limits<double>::quiet_NaN();
    write_hdf5_df_input(dir.path("nan64.h5"), df);
    const RunInput input64 = read_hdf5_input(dir.path("nan64.h5"));  // B is checked as it is read
    std::vector<double> rows64(df.B64.size());
    CHECK_THROWS_WITH(input64.df->read_rows(0, 2, rows64.data()),
                      Catch::Contains("/df/B holds a non-finite value") && Catch::Contains("flat index 5"));
    BiaTensor df32 = small_df(true);
    df32.B32[7] = std::numeric_limits<float>::infinity();
    write_hdf5_df_input(dir.path("inf32.h5"), df32);
    const RunInput input32 = read_hdf5_input(dir.path("inf32.h5"));
    std::vector<float> rows32(df32.B32.size());
    CHECK_THROWS_WITH(input32.df->read_rows(0, 2, rows32.data()),
                      Catch::Contains("/df/B holds a non-finite value") && Catch::Contains("flat index 7"));
  }
  // Every handle opened before the throw was closed.
  CHECK(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) == 0);
}

TEST_CASE("a failed write, as an output file, throws InputError naming it and leaves nothing") {
  TempDir dir;
  // Failing inside the writer (inconsistent tensor): the reason HDF5 writing gave is passed on.
  BiaTensor bad = small_df(false);
  bad.eps_occ.push_back(0.0);
  const std::string path = dir.path("bad.h5");
  CHECK_THROWS_WITH(write_output_file(path, [&](const std::string& file) { write_hdf5_df_input(file, bad); }),
                    "cannot write '" + path + "': the DF tensor sizes are inconsistent");
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(any_temporary_in(dir.path("")));
  CHECK(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) == 0);
}

TEST_CASE("files on which libhdf5 itself crashes or loops are refused as damaged") {
  // Found by tests/fuzz: read directly, libhdf5 1.10 dereferences NULL in each of the first
  // three (a local heap, an object header, an attribute's value) and loops in the last.
  const std::string dir = std::string(DFMP2_SOURCE_DIR) + "/tests/fuzz/regressions/hdf5/";
  for (const char* name : {"local-heap-crash.h5", "object-header-crash.h5", "attribute-read-crash.h5"}) {
    INFO(name);
    CHECK_THROWS_WITH(read_hdf5_input(dir + name),
                      "'" + dir + name + "' is damaged: the HDF5 library crashes reading it");
  }
  // While the check waits, a timer's signal interrupts it every 0.2 s (as libFuzzer's does):
  // the wait resumes instead of reading the file in this process, where libhdf5 would loop.
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = [](int) {};
  sigaction(SIGALRM, &ignore, &previous);  // no SA_RESTART: waitpid returns EINTR
  const itimerval every_200ms{{0, 200000}, {0, 200000}}, off{};
  setitimer(ITIMER_REAL, &every_200ms, nullptr);
  CHECK_THROWS_WITH(read_hdf5_input(dir + "global-heap-loop.h5"),
                    "'" + dir + "global-heap-loop.h5' is damaged: the HDF5 library loops reading it");
  setitimer(ITIMER_REAL, &off, nullptr);
  sigaction(SIGALRM, &previous, nullptr);
}
