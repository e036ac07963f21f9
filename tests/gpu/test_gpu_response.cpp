// The Z-vector's response (kernels/gpu/stacked_response) on the GPU's CUDA device against
// OccupiedResponse on the CPU threads: the cases tests/kernels/test_stacked_response.cpp runs on
// the host stand-in, small enough for compute-sanitizer (scripts/gpu-check/run.sh runs the
// [sanitize] cases).
#include <catch2/catch.hpp>

#include <cstddef>

#include "kernels/gpu/stacked_jk.hpp"
#include "tests/kernels/response_cases.hpp"

TEST_CASE("the Z-vector's response on the GPU equals the CPU's: one set and two (one empty), rows resident or "
          "streamed", "[gpu][sanitize]") {
  const auto cuda = [](std::size_t bytes) { return dfmp2::kernels::make_cuda_device(bytes, "the response's test"); };
  for (const bool resident : {true, false}) {
    dfmp2::test::check_response_like_cpu(cuda, {7}, resident, 51);
    dfmp2::test::check_response_like_cpu(cuda, {5, 3}, resident, 53);
    dfmp2::test::check_response_like_cpu(cuda, {4, 0}, resident, 55);
  }
}
