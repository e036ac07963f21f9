#include "src/scf/fock_builder.hpp"

#include <stdexcept>
#include <string>

namespace dfmp2 {
namespace {

using Sets = std::vector<Eigen::MatrixXd>;

std::string shape_of(const Eigen::MatrixXd& m) { return std::to_string(m.rows()) + "×" + std::to_string(m.cols()); }

// [a b]
Eigen::MatrixXd side_by_side(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  Eigen::MatrixXd out(a.rows(), a.cols() + b.cols());
  out << a, b;
  return out;
}

// FockBuilder::occupied_response's default: each product one build of the changes' factor pairs,
// its G_s then multiplied by C_s.
class ResponseFromBuilds : public FockResponse {
 public:
  ResponseFromBuilds(FockBuilder& fock, Sets C_occ, bool fp32) : fock_(fock), C_occ_(std::move(C_occ)), fp32_(fp32) {}

  Sets of_changes(const Sets& L, kernels::Precision precision) override {
    if (precision == kernels::Precision::fp32 && !fp32_)
      throw std::logic_error("FockResponse: an fp32 product from a response made without fp32");
    Sets left, right;  // Z_s = [L_s C_s] [C_s L_s]ᵀ
    for (std::size_t s = 0; s < L.size(); ++s) {
      left.push_back(side_by_side(L[s], C_occ_[s]));
      right.push_back(side_by_side(C_occ_[s], L[s]));
    }
    std::vector<FactorPair> densities;
    for (std::size_t s = 0; s < L.size(); ++s) densities.push_back({left[s], right[s]});
    return occupied_columns(densities, precision, 1.0);
  }

  Sets of_symmetric(const Sets& D) override {
    const Eigen::MatrixXd identity = Eigen::MatrixXd::Identity(D.front().rows(), D.front().cols());
    std::vector<FactorPair> densities;  // D_s = D_s 1ᵀ
    for (const Eigen::MatrixXd& D_s : D) densities.push_back({D_s, identity});
    return occupied_columns(densities, kernels::Precision::fp64, 2.0);
  }

 private:
  // factor G_s C_s of the densities, counting the build's work as the response's.
  Sets occupied_columns(std::span<const FactorPair> densities, kernels::Precision precision, double factor) {
    const StageWork before = fock_.work();
    Sets G = fock_.fock(densities, precision);
    for (std::size_t s = 0; s < G.size(); ++s) G[s] = factor * (G[s] * C_occ_[s]);
    work_ += fock_.work() - before;
    return G;
  }

  FockBuilder& fock_;
  Sets C_occ_;
  bool fp32_;
};

}  // namespace

std::vector<Eigen::MatrixXd> FockBuilder::fock(std::span<const FactorPair> densities, kernels::Precision precision) {
  if (densities.empty() || densities.size() > 2)
    throw std::invalid_argument("FockBuilder::fock: one density per set of orbitals, one or two sets, not " +
                                std::to_string(densities.size()));
  const auto n = static_cast<Eigen::Index>(functions());
  for (const FactorPair& d : densities)
    if (d.left.rows() != n || d.right.rows() != n || d.left.cols() != d.right.cols())
      throw std::invalid_argument("FockBuilder::fock: factors " + shape_of(d.left) + " and " + shape_of(d.right) +
                                  " for " + std::to_string(n) + " functions");
  return two_electron_fock(densities, precision);
}

std::unique_ptr<FockResponse> FockBuilder::occupied_response(std::vector<Eigen::MatrixXd> C_occ, MemoryBudget&,
                                                             bool fp32, const ResponseOnGpu*) {
  return std::make_unique<ResponseFromBuilds>(*this, std::move(C_occ), fp32);
}

}  // namespace dfmp2
