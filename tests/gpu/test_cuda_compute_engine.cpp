// The compute seam's cuBLAS engine against the CPU engine on the same operands: every product of
// the interface, both precisions, strided views; and its refusal of host views. CUDA builds only.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/compute_engine.hpp"
#include "kernels/gpu/cuda_compute_engine.hpp"
#include "tests/kernels/random_matrix.hpp"

namespace k = dfmp2::kernels;

namespace {

// A random matrix (3 added to its diagonal: a well-conditioned triangle to solve with) on the
// host and its copy on the device.
template <typename Real>
struct Operand {
  dfmp2::test::RandomMatrix<Real> host;
  Real* device = nullptr;
  Operand(std::size_t rows, std::size_t cols, std::mt19937& rng) : host(rows, cols, rng) {
    for (std::size_t d = 0; d < std::min(rows, cols); ++d) host(d, d) += Real(3);
    REQUIRE(cudaMalloc(&device, host.data.size() * sizeof(Real)) == cudaSuccess);
    REQUIRE(cudaMemcpy(device, host.data.data(), host.data.size() * sizeof(Real), cudaMemcpyHostToDevice) ==
            cudaSuccess);
  }
  ~Operand() { cudaFree(device); }
  Operand(const Operand&) = delete;
  Operand& operator=(const Operand&) = delete;
  k::MatrixView<Real> on_host() { return host.view(); }
  k::MatrixView<Real> on_device() { return k::device_matrix(device, host.rows, host.cols, host.ld); }
  // The device's result against the host's, both engines rounding in their own orders.
  void check_equal() {
    std::vector<Real> back(host.data.size());
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    REQUIRE(cudaMemcpy(back.data(), device, back.size() * sizeof(Real), cudaMemcpyDeviceToHost) == cudaSuccess);
    for (std::size_t x = 0; x < back.size(); ++x)
      CHECK(std::abs(double(back[x]) - double(host.data[x])) <= dfmp2::test::kEngineTolerance<Real>);
  }
};

template <typename Real>
void check_engines_agree() {
  std::mt19937 rng(23);
  k::CudaComputeEngine gpu;
  k::ComputeEngine& cpu = k::cpu_engine();
  for (const k::Op a : {k::Op::none, k::Op::transpose})
    for (const k::Op b : {k::Op::none, k::Op::transpose}) {
      Operand<Real> A(a == k::Op::none ? 5 : 7, a == k::Op::none ? 7 : 5, rng),
          B(b == k::Op::none ? 7 : 4, b == k::Op::none ? 4 : 7, rng), C(5, 4, rng);
      cpu.gemm(a, b, Real(0.5), A.on_host(), B.on_host(), Real(-1), C.on_host());
      gpu.gemm(a, b, Real(0.5), A.on_device(), B.on_device(), Real(-1), C.on_device());
      C.check_equal();
    }
  Operand<Real> X(6, 3, rng), S(6, 6, rng), B(6, 4, rng), C(6, 4, rng), K(6, 6, rng);
  cpu.syrk_lower(k::Op::none, Real(2), X.on_host(), Real(1), K.on_host());
  gpu.syrk_lower(k::Op::none, Real(2), X.on_device(), Real(1), K.on_device());
  K.check_equal();
  cpu.symm_upper_left(Real(1), S.on_host(), B.on_host(), Real(0), C.on_host());
  gpu.symm_upper_left(Real(1), S.on_device(), B.on_device(), Real(0), C.on_device());
  C.check_equal();
  for (const k::Op op : {k::Op::none, k::Op::transpose}) {
    cpu.solve_lower(k::Side::left, op, Real(1), S.on_host(), B.on_host());
    gpu.solve_lower(k::Side::left, op, Real(1), S.on_device(), B.on_device());
    B.check_equal();
  }
}

}  // namespace

TEST_CASE("the cuBLAS engine's products equal the CPU engine's, fp64 and fp32", "[compute_engine]") {
  check_engines_agree<double>();
  check_engines_agree<float>();
}

TEST_CASE("the cuBLAS engine refuses host views", "[compute_engine]") {
  k::CudaComputeEngine gpu;
  CHECK(gpu.memory() == k::Memory::device);
  std::vector<double> a(4, 1.0), c(4, 0.0);
  CHECK_THROWS_WITH(gpu.gemm(k::Op::none, k::Op::none, 1.0, k::host_matrix<const double>(a.data(), 2, 2, 2),
                             k::host_matrix<const double>(a.data(), 2, 2, 2), 0.0, k::host_matrix(c.data(), 2, 2, 2)),
                    "ComputeEngine::gemm: A is in host memory but this engine computes in device memory");
}
