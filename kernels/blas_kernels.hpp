// Which OpenBLAS kernel set the GEMM engine runs on, and whether it leaves AVX-512 unused.
#pragma once

#include <string>

namespace dfmp2::kernels {

// OpenBLAS's name for the kernel set it chose at load time ("Haswell", "Cooperlake", …).
std::string blas_kernel_name();

// The CPU and OS run AVX-512 F, VL, DQ and BW (Highway's AVX3 target, the one the energy
// reduction dispatches to): what OpenBLAS's AVX-512 kernels need.
bool cpu_has_avx512();

// Why OpenBLAS runs narrower kernels than the CPU has, or "" when it does not. OpenBLAS
// detects AVX-512 on its own; it runs its AVX2 kernels on an AVX-512 CPU only when
// OPENBLAS_CORETYPE says so, which halves the GEMM rate of every stage (measured on Zen 5:
// results/energy_backends*.md). dfmp2 follows that setting and says so.
std::string blas_kernels_narrower_than_cpu();

}  // namespace dfmp2::kernels
