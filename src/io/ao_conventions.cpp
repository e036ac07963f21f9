#include "src/io/ao_conventions.hpp"

#include <cmath>
#include <numbers>

namespace dfmp2 {
namespace {

// (2n − 1)!!, with (−1)!! = 1.
double double_factorial_odd(int n) {
  double value = 1.0;
  for (int k = 2 * n - 1; k > 1; k -= 2) value *= k;
  return value;
}

}  // namespace

std::vector<std::array<int, 3>> cartesian_components(int l) {
  std::vector<std::array<int, 3>> powers;
  for (int lx = l; lx >= 0; --lx)
    for (int ly = l - lx; ly >= 0; --ly) powers.push_back({lx, ly, l - lx - ly});
  return powers;
}

int cartesian_index(const std::array<int, 3>& powers) {
  const int l = powers[0] + powers[1] + powers[2];
  const int i = l - powers[0];
  return i * (i + 1) / 2 + powers[2];
}

double cartesian_norm(const std::array<int, 3>& powers) {
  const int l = powers[0] + powers[1] + powers[2];
  return std::sqrt(double_factorial_odd(powers[0]) * double_factorial_odd(powers[1]) *
                   double_factorial_odd(powers[2]) / double_factorial_odd(l));
}

std::vector<int> plus_minus_order(int l) {
  if (l == 1) return {2, 0, 1};  // p0, p+1, p−1 = z, x, y
  std::vector<int> order{l};      // m = 0 sits at index l of −l … +l
  for (int m = 1; m <= l; ++m) {
    order.push_back(l + m);
    order.push_back(l - m);
  }
  return order;
}

void FunctionMap::append(Eigen::Index first, const ShellMap& shell) {
  for (std::size_t k = 0; k < shell.index.size(); ++k) {
    row.push_back(first + shell.index[k]);
    factor.push_back(shell.factor[k]);
  }
}

Eigen::MatrixXd to_libint2(const Eigen::MatrixXd& C_file, const FunctionMap& map) {
  Eigen::MatrixXd C(C_file.rows(), C_file.cols());
  for (std::size_t k = 0; k < map.row.size(); ++k) C.row(map.row[k]) = map.factor[k] * C_file.row(k);
  return C;
}

Eigen::MatrixXd from_libint2(const Eigen::MatrixXd& C, const FunctionMap& map) {
  Eigen::MatrixXd C_file(C.rows(), C.cols());
  for (std::size_t k = 0; k < map.row.size(); ++k) C_file.row(k) = C.row(map.row[k]) / map.factor[k];
  return C_file;
}

double primitive_norm(int l, double alpha) {
  return std::sqrt(std::pow(2.0 * alpha / std::numbers::pi, 1.5) * std::pow(4.0 * alpha, l) /
                   double_factorial_odd(l));
}

double xl_norm(int l, const std::vector<double>& alpha, const std::vector<double>& c) {
  // ∫ x^(2l) e^(−γ r²) d³r = (2l − 1)!! π^(3/2) / (2^l γ^(l + 3/2))
  double norm2 = 0.0;
  for (std::size_t j = 0; j < alpha.size(); ++j)
    for (std::size_t k = 0; k < alpha.size(); ++k) {
      const double gamma = alpha[j] + alpha[k];
      norm2 += c[j] * c[k] * double_factorial_odd(l) * std::pow(std::numbers::pi, 1.5) /
               (std::pow(2.0, l) * std::pow(gamma, l + 1.5));
    }
  return std::sqrt(norm2);
}

double orthonormality_error(const Eigen::MatrixXd& C, const Eigen::MatrixXd& S) {
  const Eigen::MatrixXd M = C.transpose() * S * C;
  return (M - Eigen::MatrixXd::Identity(M.rows(), M.cols())).cwiseAbs().maxCoeff();
}

}  // namespace dfmp2
