// The method, stage by stage (stages.hpp): setup → integrals → SCF → DF transform → energy.
#pragma once

#include <memory>
#include <optional>

#include "src/common/progress.hpp"
#include "src/run/options.hpp"
#include "src/run/run_input.hpp"
#include "src/run/run_result.hpp"

namespace dfmp2 {

// The whole method.
RunResult run(const RunInput& input, const RunOptions& options, Progress& progress);

// The stages up to B_ia^P, then the energy step as often as wanted: for benchmarks and tests
// that run several energy backends on one B. Collective over the ranks.
class PreparedRun {
 public:
  PreparedRun(const RunInput& input, const RunOptions& options, Progress& progress);
  ~PreparedRun();
  // The result so far: everything before the energy step.
  const RunResult& result() const;
  // The run's result with this energy step (its timings: the stages so far and this step), on the
  // device the options named, or on `device`.
  RunResult energy(kernels::Backend backend, kernels::Precision precision,
                   std::optional<kernels::Device> device = std::nullopt);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dfmp2
