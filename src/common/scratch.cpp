#include "src/common/scratch.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "src/common/errors.hpp"

namespace dfmp2 {
namespace {

// An unnamed file in `directory`, or -1 with errno set.
int open_unnamed(const std::string& directory) {
#ifdef O_TMPFILE
  const int unnamed = open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (unnamed >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)) return unnamed;
#endif
  // The file system has no O_TMPFILE: a named file, unlinked before anything is written to it.
  std::string name = directory + "/dfmp2-scratch-XXXXXX";
  std::vector<char> path(name.begin(), name.end());
  path.push_back('\0');
  const int fd = mkostemp(path.data(), O_CLOEXEC);
  if (fd >= 0) unlink(path.data());
  return fd;
}

}  // namespace

std::atomic<std::size_t> ScratchFile::written_{0}, ScratchFile::read_{0};

std::string default_scratch_path() {
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
}

ScratchDirectory::ScratchDirectory(std::string path) : path_(std::move(path)) {
  struct stat info {};
  if (stat(path_.c_str(), &info) != 0)
    throw InputError("scratch directory '" + path_ + "' does not exist (give an existing one with --scratch DIR)");
  if (!S_ISDIR(info.st_mode)) throw InputError("scratch directory '" + path_ + "' is not a directory");
  const int fd = open_unnamed(path_);
  if (fd < 0)
    throw InputError("cannot write to the scratch directory '" + path_ + "': " + std::strerror(errno) +
                     " (give a writable one with --scratch DIR)");
  close(fd);
}

std::size_t ScratchDirectory::free_bytes() const {
  struct statvfs info {};
  if (statvfs(path_.c_str(), &info) != 0) return 0;
  return static_cast<std::size_t>(info.f_bavail) * static_cast<std::size_t>(info.f_frsize);
}

ScratchFile::ScratchFile(const ScratchDirectory& directory, std::string what)
    : directory_(directory.path()), what_(std::move(what)) {
  fd_ = open_unnamed(directory_);
  if (fd_ < 0) fail("create", errno);
}

ScratchFile::~ScratchFile() {
  if (fd_ >= 0) close(fd_);
}

void ScratchFile::fail(const char* action, int error) const {
  if (error == ENOSPC || error == EDQUOT || error == EFBIG)
    throw InputError("the scratch directory '" + directory_ + "' is full (" + std::strerror(error) + ") writing " +
                     what_ + ": give --scratch a larger disk, or more --memory");
  throw InputError(std::string("cannot ") + action + " " + what_ + " in the scratch directory '" + directory_ +
                   "': " + std::strerror(error));
}

void ScratchFile::write(std::size_t offset, const void* data, std::size_t bytes) {
  const char* from = static_cast<const char*>(data);
  for (std::size_t done = 0; done < bytes;) {
    const ssize_t n = pwrite(fd_, from + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write", n < 0 ? errno : ENOSPC);  // a write of 0 bytes: no room left
    done += static_cast<std::size_t>(n);
  }
  written_ += bytes;
}

void ScratchFile::read(std::size_t offset, void* data, std::size_t bytes) const {
  char* to = static_cast<char*>(data);
  for (std::size_t done = 0; done < bytes;) {
    const ssize_t n = pread(fd_, to + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("read", n < 0 ? errno : EIO);  // short: the file lost what was written
    done += static_cast<std::size_t>(n);
  }
  read_ += bytes;
}

}  // namespace dfmp2
