// Runs dfmp2 (under a launcher such as mpirun, or none) and reads back the JSON it wrote.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/src/run_command.hpp"

constexpr std::size_t MiB = std::size_t(1) << 20;

// Benzene in cc-pVDZ: the run the memory and scratch tests give budgets against.
inline const std::string kBenzeneCcPvdz = source("inputs/benzene.xyz") + " --basis cc-pvdz";

inline nlohmann::json run_json(const TempDir& dir, const std::string& args,
                               const std::string& launcher = "") {
  static int counter = 0;
  const std::string json = dir.path("run" + std::to_string(counter++) + ".json");
  const CommandResult r = run_command(launcher + " " + std::string(DFMP2_EXE) + " " + args +
                                      " --quiet --json " + json);
  INFO(launcher << " dfmp2 " << args << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(read_text(json));
}

// The entry of the run's memory plan for `stage` ("SCF", "DF transform", ...).
inline const nlohmann::json& planned_stage(const nlohmann::json& run, const std::string& stage) {
  for (const auto& s : run["memory"]["plan"])
    if (s["stage"] == stage) return s;
  FAIL("the memory plan has no stage " << stage);
  throw;  // not reached: FAIL throws
}

// Whether the run's plan for `stage` puts a block named `what` on disk.
inline bool planned_on_disk(const nlohmann::json& run, const std::string& stage, const std::string& what) {
  for (const auto& block : planned_stage(run, stage)["blocks"])
    if (block["what"] == what && block["on_disk"].get<bool>()) return true;
  return false;
}

// Each stage of the run drew at most the RAM its plan gave it, and nearly all of it: the
// allocations and the up-front check are one model.
inline void check_drawn_as_planned(const nlohmann::json& run) {
  for (const auto& stage : run["memory"]["plan"]) {
    INFO(stage.dump());
    const double planned = stage["ram_bytes"].get<double>(), drawn = stage["drawn_peak_bytes"].get<double>();
    CHECK(drawn <= planned);
    CHECK(drawn >= 0.95 * planned);
  }
}

// The largest difference between two runs' gradients, element by element (Eh/bohr).
inline double largest_gradient_difference(const nlohmann::json& a, const nlohmann::json& b) {
  REQUIRE(a["gradient"].size() == b["gradient"].size());
  double largest = 0.0;
  for (std::size_t atom = 0; atom < a["gradient"].size(); ++atom)
    for (std::size_t x = 0; x < 3; ++x)
      largest =
          std::max(largest, std::abs(a["gradient"][atom][x].get<double>() - b["gradient"][atom][x].get<double>()));
  return largest;
}

// The --memory a run refused for too little names as the least it needs ("raise --memory to at
// least 103.42 MiB"), in bytes.
inline double least_memory_named(const CommandResult& refused) {
  INFO(refused.err);
  REQUIRE(refused.exit_code == 1);
  const std::string at_least = "raise --memory to at least ";
  const std::size_t at = refused.err.find(at_least);
  REQUIRE(at != std::string::npos);
  std::size_t digits = 0;
  const double mib = std::stod(refused.err.substr(at + at_least.size()), &digits);
  REQUIRE(refused.err.compare(at + at_least.size() + digits, 4, " MiB") == 0);
  return mib * double(MiB);
}
