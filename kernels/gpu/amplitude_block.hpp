// The DF-MP2 gradient's amplitudes formed on the GPU beside their integrals, so that I, t and T
// never cross to the host: a block of the closed-shell ones (JKDevice::closed_shell_amplitudes),
// and one occupied orbital k's open-shell ones with every i of a spin (open_shell_amplitudes).
#pragma once

#include <cstddef>

namespace dfmp2::kernels {

// Every active i (o of them) with the block's orbitals k0 .. k0 + nk − 1, v virtuals: I, t and T
// are o·v × nk·v, row-major [i][a][k][b] (rows nk·v apart). Each pair (i, k) gets
//   t_ab = I_ab / (ε_i + ε_k − ε_a − ε_b),   T_ab = 2 t_ab − t_ba,
// and, as the energy step sums i ≥ j (pair (k, i)'s energy being pair (i, k)'s), the weighted
//   os = w Σ_ab t_ab I_ab,   ss = w Σ_ab (t_ab − t_ba) I_ab,   w = 1 for i = k, 2 for i > k, 0 for i < k,
// at energies[2 (i·nk + k − k0)] and the next element. Every pointer is the device's.
struct ClosedShellBlock {
  const double* I = nullptr;
  double* t = nullptr;
  double* T = nullptr;
  const double* eps_occ = nullptr;  // the o active orbitals' energies
  const double* eps_vir = nullptr;  // the v virtuals'
  double* energies = nullptr;       // 2·o·nk
  std::size_t o = 0, v = 0, k0 = 0, nk = 0;
};

// Every active i (o of them, of the rows' spin) with one occupied orbital k: I and t are o·va × vb,
// row-major [i][a][b] (a of i's spin, b of k's). Each pair (i, k) gets
//   opposite spins: t_ab = I_ab / (ε_i + ε_k − ε_a − ε_b),
//   same spin (va = vb): t_ab = (I_ab − I_ba) / (ε_i + ε_k − ε_a − ε_b), antisymmetric,
// and Σ_ab t_ab I_ab at energies[i], unweighted (the loop counts each pair's energy once).
struct OpenShellBlock {
  const double* I = nullptr;
  double* t = nullptr;
  const double* eps_occ = nullptr;  // the o active orbitals' energies, of the rows' spin
  const double* eps_a = nullptr;    // the va virtuals' of the rows' spin
  const double* eps_b = nullptr;    // the vb virtuals' of k's spin
  double eps_k = 0.0;
  double* energies = nullptr;  // o
  std::size_t o = 0, va = 0, vb = 0;
  bool same_spin = false;
};

}  // namespace dfmp2::kernels
