// Scratch space on disk for tensors that do not fit the memory budget: --scratch DIR (default
// $TMPDIR, else /tmp). Scratch files have no name (O_TMPFILE, or created and unlinked at once), so
// whatever ends the run — an error, a full disk, a signal, a crash — the system reclaims them:
// no run leaves a scratch file behind, and MPI ranks never share one.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

namespace dfmp2 {

// $TMPDIR when set and not empty, else /tmp.
std::string default_scratch_path();

class ScratchDirectory {
 public:
  // Throws InputError when `path` is missing, not a directory, or a file cannot be made in it.
  explicit ScratchDirectory(std::string path);
  const std::string& path() const { return path_; }
  // What an unprivileged writer may still put there (statvfs), bytes.
  std::size_t free_bytes() const;

 private:
  std::string path_;
};

// One unnamed file in a scratch directory, written and read at byte offsets. The run's scratch
// I/O is counted for its report.
class ScratchFile {
 public:
  ScratchFile(const ScratchDirectory& directory, std::string what);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  // Throw InputError naming the file's contents and the directory when the system refuses (a
  // full disk: "the scratch directory … is full").
  void write(std::size_t offset, const void* data, std::size_t bytes);
  void read(std::size_t offset, void* data, std::size_t bytes) const;

  // Bytes written to and read from every scratch file of this process so far.
  static std::size_t total_written() { return written_; }
  static std::size_t total_read() { return read_; }

 private:
  [[noreturn]] void fail(const char* action, int error) const;
  std::string directory_, what_;
  int fd_ = -1;
  static std::atomic<std::size_t> written_, read_;
};

}  // namespace dfmp2
