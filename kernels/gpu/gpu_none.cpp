// A build without CUDA: the GPU energy step, J/K builds and DF transform are not there, and say so in one line.
#include <stdexcept>

#include "kernels/gpu/gpu_energy.hpp"
#include "kernels/gpu/gpu_jk.hpp"
#include "kernels/gpu/stacked_jk.hpp"

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

struct GpuJK::Impl {};

GpuJK::GpuJK(const BlockPackedLayout&, const GpuJKPlan&) { throw GpuError(std::string("no usable GPU: ") + kNoCuda); }
GpuJK::~GpuJK() = default;
void GpuJK::begin(std::span<const DensityFactors>, Precision) { throw GpuError(kNoCuda); }
void GpuJK::add(std::size_t, const double*, std::size_t) { throw GpuError(kNoCuda); }
void GpuJK::finish(std::span<double* const>, std::span<double* const>) { throw GpuError(kNoCuda); }
std::size_t GpuJK::uploaded_bytes() const { return 0; }

std::unique_ptr<JKDevice> make_cuda_device(std::size_t, const std::string&) {
  throw GpuError(std::string("no usable GPU: ") + kNoCuda);
}

}  // namespace dfmp2::kernels
