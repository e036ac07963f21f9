#include "kernels/symmetric_eigen.hpp"

#include <stdexcept>
#include <vector>

extern "C" void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda,
                        double* w, double* work, const int* lwork, int* iwork, const int* liwork,
                        int* info);

namespace dfmp2::kernels {

SymmetricEigen symmetric_eigen(const Eigen::MatrixXd& A) {
  SymmetricEigen result{Eigen::VectorXd(A.rows()), A};
  const int n = static_cast<int>(A.rows());
  if (n == 0) return result;
  int info = 0, lwork = -1, liwork = -1, iwork_size = 0;
  double work_size = 0.0;
  dsyevd_("V", "L", &n, result.vectors.data(), &n, result.values.data(), &work_size, &lwork,
          &iwork_size, &liwork, &info);  // workspace query
  lwork = static_cast<int>(work_size);
  liwork = iwork_size;
  std::vector<double> work(static_cast<std::size_t>(lwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  dsyevd_("V", "L", &n, result.vectors.data(), &n, result.values.data(), work.data(), &lwork,
          iwork.data(), &liwork, &info);
  if (info != 0) throw std::runtime_error("dsyevd failed with info " + std::to_string(info));
  return result;
}

}  // namespace dfmp2::kernels
