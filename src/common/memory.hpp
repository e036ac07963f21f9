// Memory: the run's one budget (--memory), the large arrays the stages draw from it, and what
// the process used (peak RSS, page faults).
#pragma once

#include <cstddef>
#include <mutex>
#include <map>
#include <string>
#include <utility>

namespace dfmp2 {

std::size_t physical_memory_bytes();
// Half the machine's RAM: room for the OS and other jobs.
std::size_t default_memory_budget();
// "1.5 GiB", "300 MiB", "12 KiB", "615.9 TiB" (a double: sizes a run is refused for may pass 2^64).
std::string format_bytes(double bytes);
// "4GB", "500MiB", "2g", "1024" (bytes) → bytes; throws InputError when malformed.
std::size_t parse_memory(const std::string& text);

struct ResourceUsage {
  std::size_t peak_rss_bytes = 0;
  long minor_faults = 0, major_faults = 0;  // page faults so far (getrusage)
};
ResourceUsage resource_usage();
std::size_t current_rss_bytes();

class MemoryBudget;

// An uninitialised array drawn from a MemoryBudget. Its pages come from the budget's pool,
// mapped once, and go back to the pool when the array
// dies, so a later stage reuses them without new page faults (an array that fits in no free
// piece has the free pieces returned to the system before new pages are mapped).
template <typename T>
class LargeArray {
 public:
  LargeArray() = default;
  LargeArray(LargeArray&& other) noexcept { swap(other); }
  LargeArray& operator=(LargeArray&& other) noexcept {
    LargeArray(std::move(other)).swap(*this);
    return *this;
  }
  LargeArray(const LargeArray&) = delete;
  LargeArray& operator=(const LargeArray&) = delete;
  ~LargeArray();

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t k) { return data_[k]; }
  const T& operator[](std::size_t k) const { return data_[k]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  friend class MemoryBudget;
  void swap(LargeArray& other) noexcept {
    std::swap(budget_, other.budget_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(bytes_, other.bytes_);
  }
  MemoryBudget* budget_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0, bytes_ = 0;
};

// The whole run's memory: what the process held when the budget was made (code, libraries,
// BLAS buffers) with an allowance for small allocations, the large arrays, and what stages
// reserve for their other holdings (matrices, per-thread workspaces), together never more than
// the limit. Stages size their batches from
// available() and get one clear InputError, naming what needed how much, when even the
// smallest batch does not fit. Allocation and release are for one thread at a time.
class MemoryBudget {
 public:
  explicit MemoryBudget(std::size_t limit_bytes);
  ~MemoryBudget();
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  std::size_t limit() const { return limit_; }
  // The largest array that can still be drawn: the limit less the baseline, the arrays held and
  // the reservations (rounded down to allocate()'s page size).
  std::size_t available() const;
  // The most drawn at once (arrays and reservations), and the baseline it started from.
  std::size_t peak_drawn() const { return peak_drawn_; }
  // The most drawn at once since the last mark(): one stage's peak.
  void mark() {
    const std::lock_guard lock(mutex_);
    peak_since_mark_ = drawn_;
  }
  std::size_t peak_since_mark() const { return peak_since_mark_; }
  std::size_t baseline() const { return baseline_; }

  // What an array of `bytes` draws: whole pages (plans count arrays with it).
  static std::size_t array_bytes(std::size_t bytes);
  static std::size_t double_array_bytes(std::size_t count) { return array_bytes(sizeof(double) * count); }
  // Room a plan keeps beside an array for its being rounded up to whole pages.
  static constexpr std::size_t kPageSlack = std::size_t(4) << 10;

  template <typename T>
  LargeArray<T> allocate(std::size_t count, const std::string& what) {
    LargeArray<T> array;
    array.bytes_ = array_bytes(count * sizeof(T));
    array.data_ = static_cast<T*>(take(array.bytes_, what));
    array.size_ = count;
    array.budget_ = this;
    return array;
  }

  // Memory held outside LargeArrays, counted for the lifetime of the Reservation.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept
        : budget_(std::exchange(other.budget_, nullptr)), bytes_(other.bytes_) {}
    Reservation& operator=(Reservation&& other) noexcept {
      Reservation(std::move(other)).swap(*this);
      return *this;
    }
    ~Reservation();

   private:
    friend class MemoryBudget;
    void swap(Reservation& other) noexcept {
      std::swap(budget_, other.budget_);
      std::swap(bytes_, other.bytes_);
    }
    MemoryBudget* budget_ = nullptr;
    std::size_t bytes_ = 0;
  };
  Reservation reserve(std::size_t bytes, const std::string& what);

  // Throws the budget's InputError unless `bytes` more could be drawn.
  void require(std::size_t bytes, const std::string& what) const;

 private:
  template <typename T>
  friend class LargeArray;
  void* take(std::size_t bytes, const std::string& what);
  void give_back(void* data, std::size_t bytes);
  void count_drawn(std::ptrdiff_t bytes);
  void release_free_pieces();

  std::size_t limit_, baseline_;
  std::size_t drawn_ = 0, peak_drawn_ = 0, peak_since_mark_ = 0;  // arrays and reservations
  std::size_t reserved_ = 0;                // reservations alone
  std::size_t mapped_ = 0;                  // pool: arrays held plus free pieces
  std::map<char*, std::size_t> free_;       // free pieces of the pool, by address
  mutable std::mutex mutex_;
};

template <typename T>
LargeArray<T>::~LargeArray() {
  if (budget_ != nullptr) budget_->give_back(data_, bytes_);
}

}  // namespace dfmp2
