// OffloadEngine (kernels/gpu/offload_engine) on the GPU's CUDA device against the CPU engine: its
// copies of strided blocks (cudaMemcpy2DAsync, from pageable and page-locked memory), resident
// ranges, held operands, placed arrays and tiles, small enough for compute-sanitizer
// (scripts/gpu-check/run.sh runs the [sanitize] cases).
#include <catch2/catch.hpp>

#include <cstddef>

#include "kernels/gpu/stacked_jk.hpp"
#include "tests/kernels/offload_cases.hpp"
#include "tests/kernels/random_matrix.hpp"

TEST_CASE("the offload engine on the GPU equals the CPU engine: whole, in tiles, A resident or copied, B and C "
          "pinned or not",
          "[gpu][sanitize]") {
  // cuBLAS against OpenBLAS, as the cuBLAS engine's own test (test_cuda_compute_engine.cpp).
  dfmp2::test::check_offload_products(
      [](std::size_t bytes) { return dfmp2::kernels::make_cuda_device(bytes, "the offload engine's test"); },
      dfmp2::test::kEngineTolerance<double>);
}

TEST_CASE("the offload engine on the GPU solves with a held L there (cuBLAS's TRSM), in tiles of B", "[gpu][sanitize]") {
  dfmp2::test::check_offload_solves(
      [](std::size_t bytes) { return dfmp2::kernels::make_cuda_device(bytes, "the offload engine's test"); },
      dfmp2::test::kEngineTolerance<double>);
}

TEST_CASE("the offload engine on the GPU reads held operands where it copied them, until they are released",
          "[gpu][sanitize]") {
  dfmp2::test::check_held_operands(
      [](std::size_t bytes) { return dfmp2::kernels::make_cuda_device(bytes, "the offload engine's test"); },
      dfmp2::test::kEngineTolerance<double>);
}

TEST_CASE("the offload engine on the GPU writes a C that lies in a placed array where it is placed, and reads it there",
          "[gpu][sanitize]") {
  dfmp2::test::check_placed_arrays(
      [](std::size_t bytes) { return dfmp2::kernels::make_cuda_device(bytes, "the offload engine's test"); },
      dfmp2::test::kEngineTolerance<double>);
}
