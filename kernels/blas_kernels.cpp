#include "kernels/blas_kernels.hpp"

#include <hwy/targets.h>

#include <cstdlib>

extern "C" char* openblas_get_corename(void);

namespace dfmp2::kernels {

std::string blas_kernel_name() { return openblas_get_corename(); }

bool cpu_has_avx512() { return (hwy::SupportedTargets() & HWY_AVX3) != 0; }

namespace {

// OpenBLAS's AVX-512 kernel sets (0.3.21 and later).
bool is_avx512_kernel_set(const std::string& name) {
  return name == "SkylakeX" || name == "Cooperlake" || name == "SapphireRapids";
}

}  // namespace

std::string blas_kernels_narrower_than_cpu() {
  const std::string name = blas_kernel_name();
  if (!cpu_has_avx512() || is_avx512_kernel_set(name)) return "";
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  return "OpenBLAS runs its " + name + " kernels on this AVX-512 CPU" +
         (forced ? std::string(" because OPENBLAS_CORETYPE=") + forced + " is set" : std::string()) +
         "; GEMMs run at about half the rate of its AVX-512 kernels";
}

}  // namespace dfmp2::kernels
