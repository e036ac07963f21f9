// A build without CUDA: the GPU energy step is not there, and says so in one line.
#include <stdexcept>

#include "kernels/gpu/gpu_energy.hpp"

namespace dfmp2::kernels {

struct GpuEnergyEngine::Impl {};

namespace {
const char* const kNoCuda = "this dfmp2 was built without CUDA (DFMP2_CUDA=OFF, or no nvcc when it was built)";
}

std::string gpu_unavailable_reason() { return kNoCuda; }
GpuProperties gpu_properties() { throw GpuError(std::string("no usable GPU: ") + kNoCuda); }

double gpu_gemm_gflops(Precision, std::size_t, std::size_t, std::size_t, int) { throw GpuError(kNoCuda); }

GpuEnergyEngine::GpuEnergyEngine(const GpuEnergyPlan&) { throw GpuError(std::string("no usable GPU: ") + kNoCuda); }
GpuEnergyEngine::~GpuEnergyEngine() = default;
std::size_t GpuEnergyEngine::uploaded_bytes() const { return 0; }

template <typename Real>
EnergyResult GpuEnergyEngine::energy(Backend, const detail::PairSpace<Real>&, const EnergyOptions&) {
  throw GpuError(kNoCuda);
}
template EnergyResult GpuEnergyEngine::energy<double>(Backend, const detail::PairSpace<double>&, const EnergyOptions&);
template EnergyResult GpuEnergyEngine::energy<float>(Backend, const detail::PairSpace<float>&, const EnergyOptions&);

}  // namespace dfmp2::kernels
