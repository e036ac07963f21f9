// Beyond memory: the row store's rows in memory and on disk, the scratch directory's checks, runs
// whose tensors go to disk giving the in-memory energies, and the faults of a scratch disk —
// too small, filling up mid-run, a signal — each leaving nothing behind.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/common/errors.hpp"
#include "src/common/row_store.hpp"
#include "src/common/scratch.hpp"
#include "tests/src/run_json.hpp"
#include "tests/src/skip.hpp"

using namespace dfmp2;

namespace {

double stage_disk(const nlohmann::json& run, const std::string& stage) {
  return planned_stage(run, stage)["disk_bytes"].get<double>();
}

// --memory that leaves `ram` bytes beside what an in-memory run of the same input held at start.
std::string memory_beside_baseline(const nlohmann::json& in_memory, std::size_t ram) {
  return " --memory " + std::to_string(in_memory["memory"]["baseline_bytes"].get<std::size_t>() + ram);
}

// The orbitals of a run of `args` in an HDF5 file: runs from it skip the SCF, and with --scf
// exact hold little but the DF transform's and the energy step's tensors.
std::string orbitals(const TempDir& dir, const std::string& args, const std::string& name) {
  const CommandResult r = run_dfmp2(args + " --quiet --output " + dir.path(name));
  REQUIRE(r.exit_code == 0);
  return dir.path(name);
}

// Runs `script` in a mount namespace with a tmpfs of `size` mounted at $SCRATCH (unshare, as
// root or where user namespaces are allowed); false, the case reported skipped, when this machine
// cannot. DFMP2_TEST_NO_UNSHARE=1 acts as such a machine, to check that the skip is reported.
bool run_in_small_tmpfs(const TempDir& dir, const std::string& size, const std::string& script, CommandResult& r) {
  const char* refused = std::getenv("DFMP2_TEST_NO_UNSHARE");
  if ((refused != nullptr && std::string(refused) == "1") || run_command("unshare -rm true").exit_code != 0) {
    report_skipped("unshare -rm is not permitted here: no tmpfs to fill, the case is not run");
    return false;
  }
  const std::string mount_point = dir.path("tmpfs");
  std::filesystem::create_directory(mount_point);
  const std::string body =
      "mount -t tmpfs -o size=" + size + " none " + mount_point + " || exit 99; SCRATCH=" + mount_point + "; " + script;
  r = run_command("unshare -rm sh -c '" + body + "'");
  return true;
}

// Shell words that start `command` in the background (its stderr to `err`, its pid in $pid) and
// return once `pattern` is in `err` or the command has ended.
std::string start_and_await(const std::string& command, const std::string& err, const std::string& pattern) {
  return command + " 2>" + err + " & pid=$!; until grep -q \"" + pattern + "\" " + err +
         " || ! kill -0 $pid; do sleep 0.05; done; ";
}

// --memory 3 MiB above the least that a gradient run of `args` (in_memory: its in-memory run) is
// not refused with: its B_ia^P, Γ_ia^P and the JK set's c^P C partly on disk, the DF-SCF tensor in
// memory. Runs dfmp2 once, checking that the memory beside the stages before the gradient's is
// refused, naming that least memory.
std::string memory_for_gradient_rows_on_disk(const std::string& args, const nlohmann::json& in_memory) {
  const double before_gradient = std::max(planned_stage(in_memory, "integrals")["ram_bytes"].get<double>(),
                                          planned_stage(in_memory, "scf")["ram_bytes"].get<double>());
  const CommandResult refused =
      run_dfmp2(args + memory_beside_baseline(in_memory, std::size_t(before_gradient) + MiB) + " --quiet");
  REQUIRE(without_notes(refused.err).find("dfmp2: error: the gradient stage needs ") == 0);
  return " --memory " + std::to_string(std::size_t(least_memory_named(refused)) + 3 * MiB);
}

// Runs dfmp2 with `args` (its scratch directory $SCRATCH) on a 64 MiB tmpfs that another writer
// fills once the SCF has begun, and checks the one error line, exit 1, no output file and nothing
// left on the disk. The run must write to the scratch directory only after its SCF.
void check_fails_cleanly_on_full_disk(const TempDir& dir, const std::string& args) {
  const std::string out = dir.path("out.json"), err = dir.path("err");
  const std::string script =
      start_and_await(std::string(DFMP2_EXE) + " " + args + " --scratch $SCRATCH --json " + out, err, "SCF iter") +
      "cat /dev/zero > $SCRATCH/filler 2>/dev/null; wait $pid; echo exit=$?; rm $SCRATCH/filler; "
      "df -k --output=used $SCRATCH | tail -1";
  CommandResult r;
  if (!run_in_small_tmpfs(dir, "64m", script, r)) return;
  INFO(r.out << read_text(err));
  CHECK(r.out.find("exit=1") != std::string::npos);
  const std::string message = without_notes(read_text(err));
  CHECK(message.find("dfmp2: error: the scratch directory '") != std::string::npos);
  CHECK(message.find("is full (No space left on device)") != std::string::npos);
  CHECK(!std::filesystem::exists(out));
  CHECK(std::stol(r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1)) == 0);  // nothing left on the disk
}

}  // namespace

TEST_CASE("a row store keeps its first rows in memory and the rest on disk, written by blocks, read in blocks") {
  TempDir dir;
  MemoryBudget budget(current_rss_bytes() + 64 * MiB);
  const ScratchDirectory scratch(dir.path(""));
  const std::size_t rows = 11, cols = 7;
  for (std::size_t ram_rows : {std::size_t(0), std::size_t(4), rows}) {
    INFO("rows in memory: " << ram_rows);
    RowStore store(rows, cols, ram_rows, budget, &scratch, "a test matrix");
    CHECK(store.disk_rows() == rows - ram_rows);
    std::vector<double> all(rows * cols);
    std::iota(all.begin(), all.end(), 1.0);
    store.write(0, rows, 0, 3, all.data(), cols);          // a block of columns of every row
    store.write(0, 5, 3, cols - 3, all.data() + 3, cols);  // the rest of the first rows
    store.write(5, rows - 5, 3, cols - 3, all.data() + 5 * cols + 3, cols);
    std::vector<double> back(rows * cols, 0.0), columns(rows * 2, 0.0);
    store.read(0, rows, back.data());
    CHECK(back == all);
    store.read(2, 6, 4, 2, columns.data(), 2);  // rows 2..7, columns 4..5
    for (std::size_t r = 0; r < 6; ++r)
      for (std::size_t c = 0; c < 2; ++c) CHECK(columns[r * 2 + c] == all[(r + 2) * cols + 4 + c]);
    // In order: the rows in memory at once, then the file's in blocks of three rows.
    std::vector<double> buffer(3 * cols), next(3 * cols), seen;
    std::size_t expected_first = 0;
    store.for_each_block(buffer, next, [&](std::size_t first, std::size_t n, const double* data) {
      CHECK(first == expected_first);
      CHECK((first < ram_rows ? n == ram_rows : n <= 3));
      seen.insert(seen.end(), data, data + n * cols);
      expected_first += n;
    });
    CHECK(seen == all);
  }
  CHECK(std::filesystem::is_empty(dir.path("")));  // scratch files have no name
}

TEST_CASE("a scratch directory that is missing, a file, or not writable is refused with one clear message") {
  CHECK_THROWS_WITH(ScratchDirectory("/nonexistent/scratch"), Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(ScratchDirectory("/etc/hostname"), Catch::Contains("is not a directory"));
  CHECK_THROWS_WITH(ScratchDirectory("/proc"), Catch::Contains("cannot write to the scratch directory '/proc'"));
  const CommandResult r = run_dfmp2(kBenzeneCcPvdz + " --scratch /nonexistent/scratch");
  CHECK(r.exit_code == 1);
  CHECK(without_notes(r.err) ==
        "dfmp2: error: scratch directory '/nonexistent/scratch' does not exist (give an existing one with "
        "--scratch DIR)\n");
  CHECK(r.out.empty());  // refused before any work
}

TEST_CASE("out of core: each stage's tensors on disk give the in-memory energies and draw what the plan says, every backend and precision") {
  TempDir dir;
  // The DF-SCF tensor partly on disk, the rest in memory.
  const std::string scf = " --d-convergence 1e-10";
  const auto in_memory = run_json(dir, kBenzeneCcPvdz + scf);
  const auto part = run_json(dir, kBenzeneCcPvdz + scf + memory_beside_baseline(in_memory, 25 * MiB));
  CHECK(stage_disk(in_memory, "scf") == 0.0);
  CHECK(stage_disk(part, "scf") > 0.0);
  CHECK(stage_disk(part, "df_transform") == 0.0);
  check_drawn_as_planned(in_memory);
  check_drawn_as_planned(part);
  for (const char* key : {"e_scf", "e_os", "e_ss"})
    CHECK(std::abs(part[key].get<double>() - in_memory[key].get<double>()) < 1e-10);
  // Given orbitals and one exact Fock build: (Q|ia) and B on disk, the energy step in blocks.
  const std::string given = orbitals(dir, kBenzeneCcPvdz, "rhf.h5") + " --scf exact";
  for (const char* choice : {"--backend fused", "--backend loop", "--backend reference", "--precision fp32"}) {
    INFO(choice);
    const auto reference = run_json(dir, given + " " + choice);
    const auto on_disk = run_json(dir, given + memory_beside_baseline(reference, 12 * MiB) + " " + choice);
    for (const char* stage : {"df_transform", "energy"}) CHECK(stage_disk(on_disk, stage) > 0.0);
    CHECK(on_disk["memory"]["scratch"]["read_bytes"].get<double>() > 0.0);
    check_drawn_as_planned(reference);
    check_drawn_as_planned(on_disk);
    // Blocks sum B's rows in other groupings: fp32's rounding moves E_corr by up to ~1e-9.
    const double tolerance = std::string(choice) == "--precision fp32" ? 1e-8 : 1e-10;
    for (const char* key : {"e_scf", "e_os", "e_ss"})
      CHECK(std::abs(on_disk[key].get<double>() - reference[key].get<double>()) < tolerance);
  }
}

TEST_CASE("out of core, UHF: both spins from one pass, on disk, give the in-memory energies") {
  // The benzene cation (21 α, 20 β). Its budget holds the SCF stage and 4 MiB more, well below
  // both spins' B_ia^P (12.3 MiB): a start-up RSS a few MiB off the in-memory run's still puts B
  // (and so the energy step's reads) on disk. Allyl's B, 2.3 MiB, left too thin a margin.
  TempDir dir;
  const std::string cation = kBenzeneCcPvdz + " --charge 1 --multiplicity 2 --reference uhf";
  const std::string given = orbitals(dir, cation, "uhf.h5") + " --reference uhf --scf exact";
  const auto in_memory = run_json(dir, given);
  const double scf = planned_stage(in_memory, "scf")["ram_bytes"].get<double>();
  const auto on_disk = run_json(dir, given + memory_beside_baseline(in_memory, std::size_t(scf) + 4 * MiB));
  for (const char* stage : {"df_transform", "energy"}) CHECK(stage_disk(on_disk, stage) > 0.0);
  check_drawn_as_planned(on_disk);
  for (const char* key : {"e_scf", "e_aa", "e_bb", "e_os"})
    CHECK(std::abs(on_disk[key].get<double>() - in_memory[key].get<double>()) < 1e-10);
}

TEST_CASE("out of core, RHF and UHF gradients: B_ia^P, Γ_ia^P and the JK set's c^P C partly on disk give the "
          "in-memory gradient") {
  // Benzene's gradient with room for its stages before the gradient's only is refused, naming the
  // least memory its gradient stage runs in: with every row of B and Γ and of the JK set's c^P C
  // on disk. 3 MiB above that, some of their rows are in memory beside the others on disk (the
  // plan shows the files of the phase with most on disk, Γ is in both and B has Γ's rows; its note
  // says how many rows of each are in memory). The
  // SCF in fp64 to 1e-10, so that the budgets' other choices do not move the orbitals the
  // gradients are of. UHF (of the same closed shell) holds both spins' B, Γ and c^P C.
  TempDir dir;
  for (const std::string reference : {"rhf", "uhf"}) {
    INFO(reference);
    const std::string args =
        kBenzeneCcPvdz + " --gradient --fp32-until 0 --d-convergence 1e-10 --reference " + reference;
    const auto in_memory = run_json(dir, args);
    CHECK(stage_disk(in_memory, "gradient") == 0.0);
    const auto on_disk = run_json(dir, args + memory_for_gradient_rows_on_disk(args, in_memory));
    CHECK(planned_on_disk(on_disk, "gradient",
                          reference == "uhf" ? "Γ_ia^P's other rows, β" : "Γ_ia^P's other rows"));
    // c^P C's rows in memory, as the plan's note says.
    const std::string note = planned_stage(on_disk, "gradient")["note"].get<std::string>();
    std::smatch rows;
    REQUIRE(std::regex_search(note, rows, std::regex("the JK set's c\\^P C (\\d+) of (\\d+)")));
    CHECK(std::stoul(rows[1]) < std::stoul(rows[2]));
    CHECK(planned_stage(on_disk, "gradient")["read_bytes"].get<double>() > 0.0);
    check_drawn_as_planned(on_disk);
    CHECK(on_disk["memory"]["scratch"]["read_bytes"].get<double>() > 0.0);
    CHECK(std::abs(on_disk["e_total"].get<double>() - in_memory["e_total"].get<double>()) < 1e-10);
    CHECK(largest_gradient_difference(on_disk, in_memory) < 1e-10);
  }
}

TEST_CASE("a scratch disk too small for the plan is refused up front, saying what it needs") {
  TempDir dir;
  const std::string given = orbitals(dir, kBenzeneCcPvdz, "rhf.h5") + " --scf exact";
  const auto in_memory = run_json(dir, given);
  CommandResult r;
  const std::string run = std::string(DFMP2_EXE) + " " + given + " --quiet --scratch $SCRATCH" +
                          memory_beside_baseline(in_memory, 12 * MiB) + " --json " + dir.path("out.json");
  if (!run_in_small_tmpfs(dir, "1m", run, r)) return;
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(without_notes(r.err).find("dfmp2: error: this run needs ") == 0);
  CHECK(r.err.find("of scratch space on disk, but the scratch directory") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.path("out.json")));
}

TEST_CASE("a scratch disk that fills up mid-run: one error line, exit 1, no output, the space given back") {
  TempDir dir;
  // Exact SCF in memory, then the DF transform's tensors on disk: the disk is filled by another
  // writer while the SCF runs, after the up-front check has passed.
  const auto in_memory = run_json(dir, kBenzeneCcPvdz);  // its baseline, the RSS before any stage: the faster DF run's
  check_fails_cleanly_on_full_disk(dir, kBenzeneCcPvdz + " --scf exact" + memory_beside_baseline(in_memory, 12 * MiB));
}

TEST_CASE("a scratch disk that fills up before the gradient writes its rows: one error line, exit 1, no output, "
          "the space given back") {
  TempDir dir;
  // The gradient's B_ia^P, Γ_ia^P and c^P C partly on disk, the DF-SCF tensor in memory: the disk
  // fills while the SCF runs, before the gradient's first row is written.
  const std::string args = kBenzeneCcPvdz + " --gradient";
  check_fails_cleanly_on_full_disk(dir, args + memory_for_gradient_rows_on_disk(args, run_json(dir, args)));
}

TEST_CASE("SIGTERM mid-run gives the scratch space back") {
  TempDir dir;
  const auto in_memory = run_json(dir, kBenzeneCcPvdz);
  const std::string err = dir.path("err");
  // While the SCF reads its tensor from disk: the disk's use, then the signal, then the disk again.
  const std::string script =
      start_and_await(std::string(DFMP2_EXE) + " " + kBenzeneCcPvdz + memory_beside_baseline(in_memory, 25 * MiB) +
                          " --scratch $SCRATCH",
                      err, "SCF iter   2") +
      "df -k --output=used $SCRATCH | tail -1; kill -TERM $pid; wait $pid; echo status=$?; "
      "df -k --output=used $SCRATCH | tail -1";
  CommandResult r;
  if (!run_in_small_tmpfs(dir, "256m", script, r)) return;
  INFO(r.out << read_text(err));
  std::istringstream lines(r.out);
  long during = 0, after = -1;
  std::string status;
  lines >> during >> status >> after;
  CHECK(during > 1024);             // the DF-SCF tensor was on disk (KiB)
  CHECK(status == "status=143");    // died of SIGTERM
  CHECK(after == 0);
}
