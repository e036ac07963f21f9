// The gradient's amplitudes kernels (JKDevice::closed_shell_amplitudes and open_shell_amplitudes
// in kernels/gpu/gpu_jk.cu) against the host stand-in's loops (tests/kernels/host_jk_device.hpp)
// on random integrals: t, T and the weighted pair energies of a block of orbitals k; one k's
// same-spin and opposite-spin t and pair energies.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <random>
#include <tuple>
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

// One k's open-shell arrays in one device's memory: I, t, the energies, then ε.
struct OrbitalArrays {
  std::vector<double> I, t, energies, eps_occ, eps_a, eps_b;
};

OrbitalArrays run_open_shell_on(k::JKDevice& device, const OrbitalArrays& in, double eps_k, bool same_spin) {
  const std::size_t o = in.eps_occ.size(), va = in.eps_a.size(), vb = in.eps_b.size();
  double* next = reinterpret_cast<double*>(device.memory());
  const auto take = [&next](std::size_t n) { return std::exchange(next, next + n); };
  double *I = take(in.I.size()), *t = take(in.I.size()), *energies = take(o);
  double *eps_occ = take(o), *eps_a = take(va), *eps_b = take(vb);
  const k::OpenShellBlock block{I, t, eps_occ, eps_a, eps_b, eps_k, energies, o, va, vb, same_spin};
  device.copy_to(I, in.I.data(), sizeof(double) * in.I.size());
  device.copy_to(eps_occ, in.eps_occ.data(), sizeof(double) * o);
  device.copy_to(eps_a, in.eps_a.data(), sizeof(double) * va);
  device.copy_to(eps_b, in.eps_b.data(), sizeof(double) * vb);
  device.open_shell_amplitudes(block);
  OrbitalArrays out{in.I, in.I, std::vector<double>(o), in.eps_occ, in.eps_a, in.eps_b};
  device.copy_from(out.t.data(), block.t, sizeof(double) * out.t.size());
  device.copy_from(out.energies.data(), block.energies, sizeof(double) * o);
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

TEST_CASE("the open-shell amplitudes kernel equals the host's loops: same-spin and opposite-spin t and pair energies",
          "[gpu][sanitize][racecheck]") {
  std::mt19937 rng(29);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), occupied(-2.0, -0.5), virtual_(0.5, 3.0);
  // Same spin: 5 i of k's spin, 29 virtuals; opposite: 6 i of the other spin, 23 of its virtuals
  // with k's 31 (neither v·v a multiple of the 256 threads).
  for (const auto& [o, va, vb, same_spin] : {std::tuple{5u, 29u, 29u, true}, std::tuple{6u, 23u, 31u, false}}) {
    INFO("same spin " << same_spin);
    OrbitalArrays in;
    in.I.resize(std::size_t(o) * va * vb);
    for (double& x : in.I) x = 0.1 * unit(rng);
    for (std::size_t i = 0; i < o; ++i) in.eps_occ.push_back(occupied(rng));
    for (std::size_t a = 0; a < va; ++a) in.eps_a.push_back(virtual_(rng));
    in.eps_b = same_spin ? in.eps_a : std::vector<double>{};
    for (std::size_t b = in.eps_b.size(); b < vb; ++b) in.eps_b.push_back(virtual_(rng));
    const double eps_k = occupied(rng);
    const std::size_t bytes = sizeof(double) * (2 * in.I.size() + 2 * o + va + vb);
    dfmp2::test::HostJKDevice host(bytes);
    const std::unique_ptr<k::JKDevice> gpu = k::make_cuda_device(bytes, "the amplitudes kernel's test");
    const OrbitalArrays expected = run_open_shell_on(host, in, eps_k, same_spin);
    const OrbitalArrays got = run_open_shell_on(*gpu, in, eps_k, same_spin);
    CHECK(largest_relative(got.t, expected.t) <= 1e-15);  // the same quotients
    CHECK(largest_relative(got.energies, expected.energies) <= 1e-13);
    if (same_spin)  // antisymmetric in a, b
      for (std::size_t x = 0; x < got.t.size(); ++x) {
        const std::size_t i = x / (va * vb), a = x / vb % va, b = x % vb;
        CHECK(std::abs(got.t[x] + got.t[i * va * vb + b * vb + a]) <= 1e-14 * std::abs(got.t[x]));
      }
  }
}
