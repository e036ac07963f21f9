#include "src/integrals/libint.hpp"

#include <cmath>
#include <limits>

#include <libint2.hpp>
#include <omp.h>

namespace dfmp2 {

Libint2Session::Libint2Session() { libint2::initialize(); }
Libint2Session::~Libint2Session() { libint2::finalize(); }

std::vector<libint2::Engine> engines_per_thread(const libint2::Engine& prototype) {
  return std::vector<libint2::Engine>(static_cast<std::size_t>(omp_get_max_threads()), prototype);
}

libint2::Engine coulomb_engine(std::size_t max_nprim, int max_l, libint2::BraKet braket, int deriv_order) {
  using libint2::Operator;
  return libint2::Engine(Operator::coulomb, max_nprim, max_l, deriv_order, std::numeric_limits<double>::epsilon(),
                         libint2::operator_traits<Operator::coulomb>::default_params(), braket);
}

libint2::ShellPair shell_pair_data(const libint2::Shell& a, const libint2::Shell& b) {
  // An engine's default precision is machine epsilon (libint2::Engine::set_precision).
  static const double ln_precision = std::log(std::numeric_limits<double>::epsilon());
  return libint2::ShellPair(a, b, ln_precision);
}

}  // namespace dfmp2
