// Cholesky factorisation and triangular inverse of a symmetric positive definite matrix, by
// LAPACK (dpotrf, dtrtri from OpenBLAS: blocked, threaded, near the GEMM rate).
#pragma once

#include <Eigen/Core>

namespace dfmp2::kernels {

// A = L Lᵀ: overwrites A's lower triangle with L and zeroes the upper one. False when A is not
// (numerically) positive definite.
bool cholesky_lower(Eigen::MatrixXd& A);

// L⁻¹ in place, L lower triangular with a non-zero diagonal.
void invert_lower(Eigen::MatrixXd& L);

}  // namespace dfmp2::kernels
