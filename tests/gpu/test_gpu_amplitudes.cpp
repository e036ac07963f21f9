// The gradient's closed-shell amplitudes kernel (JKDevice::closed_shell_amplitudes in
// kernels/gpu/gpu_jk.cu) against the host stand-in's loops (tests/kernels/host_jk_device.hpp) on
// random integrals: t, T and the weighted pair energies of a block of orbitals k.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "kernels/gpu/stacked_jk.hpp"
#include "tests/kernels/host_jk_device.hpp"

namespace k = dfmp2::kernels;

namespace {

// The block's arrays in one device's memory: I, t, T, the energies, then ε.
struct BlockArrays {
  std::vector<double> I, t, T, energies, eps_occ, eps_vir;
};

BlockArrays run_on(k::JKDevice& device, const BlockArrays& in, std::size_t o, std::size_t v, std::size_t k0,
                   std::size_t nk) {
  double* next = reinterpret_cast<double*>(device.memory());
  const auto take = [&next](std::size_t n) { return std::exchange(next, next + n); };
  double *I = take(in.I.size()), *t = take(in.I.size()), *T = take(in.I.size()), *energies = take(2 * o * nk);
  double *eps_occ = take(o), *eps_vir = take(v);
  const k::ClosedShellBlock block{I, t, T, eps_occ, eps_vir, energies, o, v, k0, nk};
  device.copy_to(I, in.I.data(), sizeof(double) * in.I.size());
  device.copy_to(eps_occ, in.eps_occ.data(), sizeof(double) * o);
  device.copy_to(eps_vir, in.eps_vir.data(), sizeof(double) * v);
  device.closed_shell_amplitudes(block);
  BlockArrays out{in.I, in.I, in.I, std::vector<double>(2 * o * nk), in.eps_occ, in.eps_vir};
  device.copy_from(out.t.data(), block.t, sizeof(double) * out.t.size());
  device.copy_from(out.T.data(), block.T, sizeof(double) * out.T.size());
  device.copy_from(out.energies.data(), block.energies, sizeof(double) * out.energies.size());
  device.synchronise();
  return out;
}

double largest_relative(const std::vector<double>& a, const std::vector<double>& b) {
  double largest = 0.0, scale = 0.0;
  for (std::size_t x = 0; x < a.size(); ++x) {
    largest = std::max(largest, std::abs(a[x] - b[x]));
    scale = std::max(scale, std::abs(b[x]));
  }
  return largest / scale;
}

}  // namespace

TEST_CASE("the closed-shell amplitudes kernel equals the host's loops: t, T and the weighted pair energies",
          "[gpu][sanitize][racecheck]") {
  // Orbitals 2-4 of 7 as the block: pairs below, on and above the diagonal; v·v not a multiple of
  // the 256 threads.
  const std::size_t o = 7, v = 37, k0 = 2, nk = 3;
  std::mt19937 rng(23);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), occupied(-2.0, -0.5), virtual_(0.5, 3.0);
  BlockArrays in;
  in.I.resize(o * v * nk * v);
  for (double& x : in.I) x = 0.1 * unit(rng);
  for (std::size_t i = 0; i < o; ++i) in.eps_occ.push_back(occupied(rng));
  for (std::size_t a = 0; a < v; ++a) in.eps_vir.push_back(virtual_(rng));
  const std::size_t bytes = sizeof(double) * (3 * in.I.size() + 2 * o * nk + o + v);
  dfmp2::test::HostJKDevice host(bytes);
  const std::unique_ptr<k::JKDevice> gpu = k::make_cuda_device(bytes, "the amplitudes kernel's test");
  const BlockArrays expected = run_on(host, in, o, v, k0, nk), got = run_on(*gpu, in, o, v, k0, nk);
  // The same quotients (up to a contracted 2t − t' in T); the energies summed in another order.
  CHECK(largest_relative(got.t, expected.t) <= 1e-15);
  CHECK(largest_relative(got.T, expected.T) <= 1e-15);
  CHECK(largest_relative(got.energies, expected.energies) <= 1e-13);
  for (std::size_t i = 0; i < o; ++i)
    for (std::size_t kk = 0; kk < nk; ++kk)  // no energy below the diagonal (pair (k, i) has it)
      if (i < k0 + kk) CHECK(got.energies[2 * (i * nk + kk)] == 0.0);
}
