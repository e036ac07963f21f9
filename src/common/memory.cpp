#include "src/common/memory.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <new>

#include "src/common/errors.hpp"
#include "src/common/text.hpp"

namespace dfmp2 {

std::size_t physical_memory_bytes() {
  return static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) *
         static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
}

std::size_t default_memory_budget() { return physical_memory_bytes() / 2; }

std::string format_bytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = bytes;
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", value, kUnits[unit]);
  return text;
}

std::size_t parse_memory(const std::string& text) {
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = lowercase(text.substr(used));
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }), unit.end());
  double scale = 0.0;
  if (unit.empty() || unit == "b") scale = 1.0;
  else if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0 * 1024.0;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0 * 1024.0 * 1024.0;
  else if (unit == "t" || unit == "tb" || unit == "tib") scale = std::pow(1024.0, 4);
  if (used == 0 || scale == 0.0 || !(value > 0.0) || !std::isfinite(value))
    throw InputError("invalid memory size '" + text + "' (expected e.g. 4GB, 500MB)");
  if (value * scale < 1.0)  // else it would round to 0, which means the default
    throw InputError("memory size '" + text + "' is less than one byte (a number without a unit counts bytes: e.g. " +
                     text + "GB)");
  return static_cast<std::size_t>(value * scale);
}

// This program's own peak: VmHWM, the high-water mark of the process image since exec. getrusage's
// ru_maxrss is not that: Linux carries it across exec, so a dfmp2 started by a large parent (a
// Python process holding PySCF's arrays) would report the parent's peak. ru_maxrss where there is
// no /proc.
static std::size_t peak_rss_bytes(const rusage& usage) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;  // "VmHWM:  1234 kB"
  return static_cast<std::size_t>(usage.ru_maxrss) * 1024;
}

ResourceUsage resource_usage() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return {peak_rss_bytes(usage), usage.ru_minflt, usage.ru_majflt};
}

std::size_t current_rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE));
}

namespace {

constexpr std::size_t kPage = std::size_t(4) << 10;

// Anonymous memory, not touched here (MAP_NORESERVE): what is never written is never resident.
// Transparent huge pages are not requested: on the VMs dfmp2 is measured on (virtio-balloon free
// page reporting), a fresh huge page faulted in at about 2 s per GiB against 0.55 s per GiB for
// small pages, and the DF-MP2 gradient run took 3 s longer with them (docs/benchmarks.md).
void* map_pages(std::size_t bytes) {
  void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) throw std::bad_alloc();
  return mapping;
}

}  // namespace

// Small allocations are not tracked one by one (libint2's engines, Eigen temporaries, MPI and
// HDF5 buffers): a fixed allowance beside the baseline covers them.
constexpr std::size_t kUntrackedBytes = std::size_t(16) << 20;

MemoryBudget::MemoryBudget(std::size_t limit_bytes)
    : limit_(limit_bytes), baseline_(current_rss_bytes() + kUntrackedBytes) {}

MemoryBudget::~MemoryBudget() {
  for (const auto& [data, bytes] : free_) munmap(data, bytes);
}

std::size_t MemoryBudget::available() const {
  const std::lock_guard lock(mutex_);
  const std::size_t used = baseline_ + drawn_, left = used < limit_ ? limit_ - used : 0;
  return left / kPage * kPage;  // what allocate() rounds to
}

std::size_t MemoryBudget::array_bytes(std::size_t bytes) {
  return (bytes + kPage - 1) / kPage * kPage;
}

void MemoryBudget::require(std::size_t bytes, const std::string& what) const {
  const std::size_t left = limit_ > baseline_ + drawn_ ? limit_ - baseline_ - drawn_ : 0;
  if (bytes <= left) return;
  throw InputError(what + " needs " + format_bytes(bytes) + " more, but --memory " +
                   format_bytes(limit_) + " has " + format_bytes(left) +
                   " left; raise --memory to at least " +
                   format_bytes(limit_ + bytes - left));
}

void MemoryBudget::count_drawn(std::ptrdiff_t bytes) {
  drawn_ = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(drawn_) + bytes);
  peak_drawn_ = std::max(peak_drawn_, drawn_);
  peak_since_mark_ = std::max(peak_since_mark_, drawn_);
}

void* MemoryBudget::take(std::size_t bytes, const std::string& what) {
  if (bytes == 0) return nullptr;
  const std::lock_guard lock(mutex_);
  require(bytes, what);
  auto best = free_.end();  // the smallest free piece that fits
  for (auto piece = free_.begin(); piece != free_.end(); ++piece)
    if (piece->second >= bytes && (best == free_.end() || piece->second < best->second))
      best = piece;
  if (best != free_.end()) {
    char* data = best->first;
    const std::size_t size = best->second;
    free_.erase(best);
    if (size > bytes) free_.emplace(data + bytes, size - bytes);
    count_drawn(static_cast<std::ptrdiff_t>(bytes));
    return data;
  }
  // No piece fits: give the free ones back to the system before mapping new pages; kept, their
  // pages would stay resident beside the new ones, and peak RSS would exceed the most drawn.
  release_free_pieces();
  void* data = map_pages(bytes);
  mapped_ += bytes;
  count_drawn(static_cast<std::ptrdiff_t>(bytes));
  return data;
}

void MemoryBudget::give_back(void* data, std::size_t bytes) {
  if (data == nullptr) return;
  const std::lock_guard lock(mutex_);
  count_drawn(-static_cast<std::ptrdiff_t>(bytes));
  // Merge with the free neighbours (adjacent pieces of one or of adjacent mappings).
  char* begin = static_cast<char*>(data);
  std::size_t size = bytes;
  auto next = free_.lower_bound(begin);
  if (next != free_.end() && begin + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == begin) {
      previous->second += size;
      return;
    }
  }
  free_.emplace(begin, size);
}

void MemoryBudget::release_free_pieces() {
  for (const auto& [data, bytes] : free_) {
    munmap(data, bytes);
    mapped_ -= bytes;
  }
  free_.clear();
}

MemoryBudget::Reservation MemoryBudget::reserve(std::size_t bytes, const std::string& what) {
  const std::lock_guard lock(mutex_);
  require(bytes, what);
  if (baseline_ + mapped_ + reserved_ + bytes > limit_) release_free_pieces();
  reserved_ += bytes;
  count_drawn(static_cast<std::ptrdiff_t>(bytes));
  Reservation reservation;
  reservation.budget_ = this;
  reservation.bytes_ = bytes;
  return reservation;
}

MemoryBudget::Reservation::~Reservation() {
  if (budget_ == nullptr) return;
  const std::lock_guard lock(budget_->mutex_);
  budget_->reserved_ -= bytes_;
  budget_->count_drawn(-static_cast<std::ptrdiff_t>(bytes_));
}

}  // namespace dfmp2
