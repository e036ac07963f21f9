// The energy step's names: backends, precisions, devices. Apart from the dispatch in
// mp2_energy.cpp so that what writes a run's results (the HDF5 writer among the fuzzed readers)
// names them without linking the kernels.
#include <array>
#include <string>
#include <utility>

#include "kernels/mp2_energy.hpp"
#include "kernels/named_choices.hpp"

namespace dfmp2::kernels {

namespace {

constexpr std::array<std::pair<Backend, const char*>, 4> kBackendNames{{
    {Backend::reference, "reference"},
    {Backend::loop, "loop"},
    {Backend::fused, "fused"},
    {Backend::automatic, "auto"},
}};
constexpr std::array<std::pair<Precision, const char*>, 2> kPrecisionNames{{
    {Precision::fp64, "fp64"},
    {Precision::fp32, "fp32"},
}};
constexpr std::array<std::pair<Device, const char*>, 3> kDeviceNames{{
    {Device::cpu, "cpu"},
    {Device::gpu, "gpu"},
    {Device::automatic, "auto"},
}};

}  // namespace

NamedChoices<Backend> backend_names() { return kBackendNames; }
NamedChoices<Precision> precision_names() { return kPrecisionNames; }
NamedChoices<Device> device_names() { return kDeviceNames; }

Backend parse_backend(const std::string& name) { return parse_in(backend_names(), name, "energy backend"); }
std::string to_string(Backend backend) { return name_in(backend_names(), backend); }
Precision parse_precision(const std::string& name) { return parse_in(precision_names(), name, "precision"); }
std::string to_string(Precision precision) { return name_in(precision_names(), precision); }

}  // namespace dfmp2::kernels
