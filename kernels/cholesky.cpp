#include "kernels/cholesky.hpp"

#include <stdexcept>
#include <string>

extern "C" void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
extern "C" void dtrtri_(const char* uplo, const char* diag, const int* n, double* a, const int* lda, int* info);

namespace dfmp2::kernels {

bool cholesky_lower(Eigen::MatrixXd& A) {
  const int n = static_cast<int>(A.rows());
  int info = 0;
  if (n > 0) dpotrf_("L", &n, A.data(), &n, &info);
  A.triangularView<Eigen::StrictlyUpper>().setZero();
  return info == 0;
}

void invert_lower(Eigen::MatrixXd& L) {
  const int n = static_cast<int>(L.rows());
  int info = 0;
  if (n > 0) dtrtri_("L", "N", &n, L.data(), &n, &info);
  if (info != 0) throw std::runtime_error("dtrtri failed with info " + std::to_string(info));
}

}  // namespace dfmp2::kernels
