// A nuclear gradient summed over OpenMP threads: each thread adds to its own natom × 3 copy
// (no locks, no false sharing of one matrix), and the copies are summed at the end.
#pragma once

#include <cstddef>
#include <vector>

#include <Eigen/Core>
#include <omp.h>

namespace dfmp2 {

class ThreadGradients {
 public:
  explicit ThreadGradients(std::size_t natom)
      : share_(static_cast<std::size_t>(omp_get_max_threads()),
               Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(natom), 3)) {}
  // The calling thread's copy.
  Eigen::MatrixXd& mine() { return share_[static_cast<std::size_t>(omp_get_thread_num())]; }
  Eigen::MatrixXd sum() const {
    Eigen::MatrixXd total = Eigen::MatrixXd::Zero(share_[0].rows(), 3);
    for (const Eigen::MatrixXd& g : share_) total += g;
    return total;
  }

 private:
  std::vector<Eigen::MatrixXd> share_;
};

}  // namespace dfmp2
