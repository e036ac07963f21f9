// One shell pair's integrals over one effective core potential, and their first derivatives, in
// libecpint's Cartesian blocks (rows shell A, columns shell B). libecpint 1.0.7 computes them,
// except where its generated code is inexact: the shell-pair functions it unrolls (both shells off
// the potential's centre, l ≤ LIBECPINT_MAX_UNROL = 1) carry their angular factors printed to six
// significant digits (16π² → 157.914, 2.1e-6 relative), which put ECP energies 2e-8 to 6e-8 Eh
// from Psi4's and PySCF's. For those pairs the semi-local channels are summed here from
// libecpint's own radial integrals and its rolled-up angular sum, at full precision.
#pragma once

#include <array>

#include <libecpint/ecp.hpp>
#include <libecpint/ecpint.hpp>
#include <libecpint/gshell.hpp>
#include <libecpint/multiarr.hpp>
#include <libecpint/radial.hpp>

namespace dfmp2 {

// A potential as libecpint takes it, whole and as its local channel alone.
struct EcpPotential {
  libecpint::ECP whole, local;
};

EcpPotential ecp_potential(const libecpint::ECP& whole);

// One thread's integrator (libecpint's integrators are not shared between threads).
class EcpShellPairs {
 public:
  EcpShellPairs(int max_l_basis, int max_l_potential, int derivative_order);

  // ⟨A|U|B⟩ over Cartesian components; the shifts raise or lower a shell's l, as libecpint's
  // derivatives need (the shell's primitives unchanged).
  libecpint::TwoIndex<double> integrals(const EcpPotential& U, const libecpint::GaussianShell& A,
                                        const libecpint::GaussianShell& B, int shift_A = 0, int shift_B = 0) const;

  // d⟨A|U|B⟩ along x, y, z of A's centre, B's and the potential's (nine blocks, in that order).
  std::array<libecpint::TwoIndex<double>, 9> derivatives(const EcpPotential& U, const libecpint::GaussianShell& A,
                                                         const libecpint::GaussianShell& B) const;

 private:
  void add_semilocal(const libecpint::ECP& U, int lam, const libecpint::GaussianShell& A,
                     const libecpint::GaussianShell& B, int LA, int LB, libecpint::TwoIndex<double>& values) const;
  std::array<libecpint::TwoIndex<double>, 3> centre_derivative(const EcpPotential& U, const libecpint::GaussianShell& A,
                                                               const libecpint::GaussianShell& B) const;

  libecpint::ECPIntegral library_;
  libecpint::RadialIntegral radial_;
  libecpint::AngularIntegral angular_;
};

}  // namespace dfmp2
