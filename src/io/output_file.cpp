#include "src/io/output_file.hpp"

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <stdexcept>

#include <unistd.h>

#include "src/common/errors.hpp"

namespace dfmp2 {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Temporaries in progress, for the SIGINT/SIGTERM handler. A handler may neither allocate nor
// lock, so the paths live in fixed slots, and a slot is marked live only once its path is whole.

constexpr int kSlots = 16;
enum SlotState : int { kFree, kFilling, kLive };
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler reads slot states");
Slot slots[kSlots];

constexpr int kSignals[] = {SIGINT, SIGTERM};
struct sigaction previous_actions[std::size(kSignals)];

extern "C" void remove_temporaries_and_die(int signal) {
  for (Slot& slot : slots)
    if (slot.state.load() == kLive) unlink(slot.path);
  // Die as the signal would have killed the process without us: with the disposition found
  // before, raised again (delivered as soon as this handler returns).
  for (std::size_t k = 0; k < std::size(kSignals); ++k)
    if (kSignals[k] == signal) sigaction(signal, &previous_actions[k], nullptr);
  raise(signal);
}

// The handler is in place while some OutputFiles exists; before and after, the signals do
// whatever they did.
std::mutex handlers_mutex;
int handler_users = 0;

void hold_signal_handlers() {
  const std::lock_guard<std::mutex> lock(handlers_mutex);
  if (handler_users++ > 0) return;
  struct sigaction action {};
  action.sa_handler = remove_temporaries_and_die;
  sigemptyset(&action.sa_mask);
  for (int signal : kSignals) sigaddset(&action.sa_mask, signal);
  for (std::size_t k = 0; k < std::size(kSignals); ++k) {
    sigaction(kSignals[k], nullptr, &previous_actions[k]);
    // An ignored signal (SIGINT of a job a shell started in the background) stays ignored.
    if (previous_actions[k].sa_handler != SIG_IGN) sigaction(kSignals[k], &action, nullptr);
  }
}

void release_signal_handlers() {
  const std::lock_guard<std::mutex> lock(handlers_mutex);
  if (--handler_users > 0) return;
  for (std::size_t k = 0; k < std::size(kSignals); ++k)
    sigaction(kSignals[k], &previous_actions[k], nullptr);
}

int claim_slot(const std::string& path) {
  if (path.size() >= PATH_MAX) throw std::runtime_error("the path is too long");
  for (int k = 0; k < kSlots; ++k) {
    int expected = kFree;
    if (slots[k].state.compare_exchange_strong(expected, kFilling)) {
      std::memcpy(slots[k].path, path.c_str(), path.size() + 1);
      slots[k].state.store(kLive);
      return k;
    }
  }
  throw std::runtime_error("more than " + std::to_string(kSlots) + " output files at once");
}

// ---------------------------------------------------------------------------------------------
// Paths

// The file a write to `path` lands in: absolute, symlinks followed (a dangling last one too,
// since writing through it creates its target), then made canonical as far as it exists.
fs::path landing_file(const std::string& path) {
  std::error_code ec;
  fs::path file = fs::absolute(path, ec);
  for (int hops = 0; fs::is_symlink(file, ec); ++hops) {
    const fs::path link = fs::read_symlink(file, ec);
    if (ec || hops == 40)
      throw InputError("cannot follow the symbolic link '" + path + "'" +
                       (ec ? ": " + ec.message() : ": too many levels"));
    file = link.is_absolute() ? link : file.parent_path() / link;
  }
  const fs::path canonical = fs::weakly_canonical(file, ec);
  return ec ? file : canonical;
}

}  // namespace

OutputFiles::OutputFiles() { hold_signal_handlers(); }

OutputFiles::~OutputFiles() {
  for (const Pending& pending : pending_) discard(pending);
  release_signal_handlers();
}

void OutputFiles::discard(const Pending& pending) {
  std::remove(pending.temporary.c_str());
  slots[pending.slot].state.store(kFree);
}

void OutputFiles::add(const std::string& target, const FileWriter& write) {
  const auto fail = [&](const std::string& why) {
    throw InputError("cannot write '" + target + "': " + why);
  };
  const fs::path file = landing_file(target);
  std::error_code ec;
  if (!fs::is_directory(file.parent_path(), ec))
    fail("directory '" + file.parent_path().string() + "' does not exist");
  if (fs::is_directory(file, ec)) fail("it is a directory");
  Pending pending{target, file, file.string() + ".tmp-" + std::to_string(getpid()), -1};
  try {
    pending.slot = claim_slot(pending.temporary);
  } catch (const std::exception& e) {
    fail(e.what());
  }
  pending_.push_back(pending);
  try {
    write(pending.temporary);
  } catch (const std::exception& e) {
    discard(pending);
    pending_.pop_back();
    fail(e.what());
  }
}

void OutputFiles::commit() {
  for (std::size_t k = 0; k < pending_.size(); ++k) {
    const Pending& pending = pending_[k];
    if (std::rename(pending.temporary.c_str(), pending.file.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      for (std::size_t done = 0; done < k; ++done) std::remove(pending_[done].file.c_str());
      throw InputError("cannot write '" + pending.target +
                       "': cannot rename the temporary file onto it: " + why);
    }
  }
  for (const Pending& pending : pending_) slots[pending.slot].state.store(kFree);
  pending_.clear();
}

void write_output_file(const std::string& target, const FileWriter& write) {
  OutputFiles files;
  files.add(target, write);
  files.commit();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(std::strerror(errno));
  out << text;
  out.close();
  if (!out) throw std::runtime_error("writing failed (disk full?)");
}

bool same_file(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  const fs::path file_a = landing_file(a), file_b = landing_file(b);
  std::error_code ec;
  return file_a == file_b || fs::equivalent(file_a, file_b, ec);
}

}  // namespace dfmp2
