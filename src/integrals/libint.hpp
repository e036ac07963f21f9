// libint2 as its authors intend for speed: one engine per thread, and shell-pair data computed
// once per basis and passed to every compute2 call (libint2 otherwise rebuilds it on each call).
#pragma once

#include <vector>

#include <libint2/engine.h>
#include <libint2/shell.h>

namespace dfmp2 {

// libint2 must be initialised once per process while integrals are computed.
class Libint2Session {
 public:
  Libint2Session();
  ~Libint2Session();
  Libint2Session(const Libint2Session&) = delete;
  Libint2Session& operator=(const Libint2Session&) = delete;
};

std::vector<libint2::Engine> engines_per_thread(const libint2::Engine& prototype);

// Engines are called through compute1 (one-body) or compute2<operator, bra-ket, order>, never
// compute(): its run-time dispatch makes every file that calls it instantiate all of libint2's
// compute2 kinds (about 4 minutes of compilation under the sanitizers).

// A Coulomb engine for one bra-ket kind and derivative order (0: the integrals; 1: their first
// derivatives with respect to the shells' centres). The kind is fixed at construction: an engine
// built for the default four-centre kind and switched later refuses auxiliary shells above the
// four-centre limit, below the two- and three-centre one.
libint2::Engine coulomb_engine(std::size_t max_nprim, int max_l, libint2::BraKet braket, int deriv_order = 0);

// Shell-pair data at the precision libint2's engines use by default, so integrals computed with
// it are the ones libint2 would compute without it.
libint2::ShellPair shell_pair_data(const libint2::Shell& a, const libint2::Shell& b);

// libint2's own time is estimated from one computed shell set in every kLibintSampleStride: about 1 %.
inline constexpr std::size_t kLibintSampleStride = 97;

}  // namespace dfmp2
