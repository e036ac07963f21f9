// The two floating-point precisions a kernel can run in: the vocabulary the J/K build and the
// energy step share (their names for users are in mp2_energy.hpp).
#pragma once

namespace dfmp2::kernels {

enum class Precision { fp64, fp32 };

}  // namespace dfmp2::kernels
