// The MP2 gradient's Z-vector (CPHF) equations, of RHF's one set of orbitals or UHF's α and β at
// once: for each set s, with Δ_ak = ε_a − ε_k > 0 and F_s the SCF Fock builder's response
// (FockResponse::of_changes of L_s = C_v z_s; RHF: (4J − 2K)(Z), Z = ½ (C_v z C_oᵀ + C_o zᵀ C_vᵀ);
// UHF: J(Z_α + Z_β) − K(Z_s), Z_s = C_v z_s C_oᵀ + C_o z_sᵀ C_vᵀ),
//   Δ_ak z_ak + [C_vᵀ F_s(Z) C_o]_ak = b_ak,
// positive definite for a stable SCF solution, solved by conjugate gradients preconditioned with
// Δ⁻¹, until every residual element of every set is below `convergence`.
#pragma once

#include <vector>

#include <Eigen/Core>

#include "kernels/compute_engine.hpp"
#include "src/common/parallel.hpp"
#include "src/common/progress.hpp"
#include "src/scf/fock_builder.hpp"

namespace dfmp2 {

struct ZVectorEquations {
  std::vector<Eigen::MatrixXd> C_occ, C_vir;  // each set's (those `response` was made with)
  std::vector<Eigen::MatrixXd> delta, b;      // each set's Δ and right-hand side, nvir × nocc
};

struct ZVector {
  std::vector<Eigen::MatrixXd> z;
  std::vector<Eigen::MatrixXd> occupied_response;  // each set's C_oᵀ F_s(Z) C_o, for W
  int iterations = 0;
};

// Each product's occupied block is summed with z's own coefficients, so F_s(Z)'s is had without
// another product. fp32 (the response made with it): by iterative refinement, each correction
// solved in fp32 products to 1e-4 of the residual, then the residual and F_s(Z)'s occupied block
// from one fp64 product of z; the fp64 iterations take over if a round gains less than a decade.
// Over MPI the products come summed over the ranks, and root's residual decides for every rank.
// Each iteration's line goes to progress (report_z_vector_iteration). engine: of the products with
// the orbitals, on host memory.
ZVector solve_z_vector(FockResponse& response, const ZVectorEquations& equations, double convergence,
                       bool fp32, kernels::ComputeEngine& engine, Communicator& comm, const Progress& progress);

// A Z-vector iteration's line on stderr: its number and largest residual element.
void report_z_vector_iteration(const Progress& progress, int iteration, double residual);

}  // namespace dfmp2
