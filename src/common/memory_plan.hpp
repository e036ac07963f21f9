// The memory plan: for each stage of a run, the large blocks it holds at its peak, in memory
// or on disk. Each stage computes its plan from the sizes and the budget (what stays in memory,
// what goes to disk, batch sizes) and then draws exactly the planned blocks; the up-front check,
// the printed plan and the JSON all read the same plans. There is no second estimate.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dfmp2 {

struct PlannedBlock {
  std::string what;
  std::size_t bytes = 0;
  bool on_disk = false;
  bool on_gpu = false;  // in the GPU's memory (neither RAM nor disk)
};

struct StagePlan {
  std::string stage;                 // as the stage table names it
  std::vector<PlannedBlock> blocks;  // held at the stage's peak
  std::size_t read_bytes = 0;        // read back from disk per pass (an SCF iteration, the energy step)
  std::string read_per;              // what one pass is ("SCF iteration", …), when read_bytes > 0
  std::string note;                  // anything else the reader of the plan should know

  void ram(const std::string& what, std::size_t bytes) { blocks.push_back({what, bytes, false}); }
  void disk(const std::string& what, std::size_t bytes) {
    if (bytes > 0) blocks.push_back({what, bytes, true});
  }
  void gpu(const std::string& what, std::size_t bytes) {
    if (bytes > 0) blocks.push_back({what, bytes, false, true});
  }
  std::size_t ram_bytes() const { return sum(false, false); }
  std::size_t disk_bytes() const { return sum(true, false); }
  std::size_t gpu_bytes() const { return sum(false, true); }

 private:
  std::size_t sum(bool on_disk, bool on_gpu) const {
    std::size_t total = 0;
    for (const PlannedBlock& block : blocks)
      if (block.on_disk == on_disk && block.on_gpu == on_gpu) total += block.bytes;
    return total;
  }
};

using MemoryPlan = std::vector<StagePlan>;

}  // namespace dfmp2
