// Output files, all or nothing: each is written under a temporary name beside its target and
// renamed onto it only when every file of the set is complete. A reader never sees a half-written
// file, and a failure, an exception or SIGINT/SIGTERM leaves no output and no temporary behind.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace dfmp2 {

// Writes the whole file at the path it is given; throws (any std::exception) on failure.
using FileWriter = std::function<void(const std::string& path)>;

class OutputFiles {
 public:
  OutputFiles();
  ~OutputFiles();  // removes the temporaries of a set not committed
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  // Writes `target`'s content to "<target>.tmp-<pid>" now. A symlink target is written through:
  // the file it points to is replaced, the link stays. Throws InputError "cannot write
  // '<target>': <reason>" (the temporary removed) when the writer or the file system fails.
  void add(const std::string& target, const FileWriter& write);
  // Renames every temporary onto its target. When a rename fails, the targets already renamed
  // are removed too, so no output of the set remains; throws InputError.
  void commit();

 private:
  struct Pending {
    std::string target;       // as the user named it, for messages
    std::filesystem::path file;  // where it lands: symlinks followed
    std::string temporary;
    int slot;                 // its entry in the signal handler's list
  };
  void discard(const Pending& pending);
  std::vector<Pending> pending_;
};

// One output file on its own.
void write_output_file(const std::string& target, const FileWriter& write);

// Writes `text` as the whole file at `path`; throws std::runtime_error with the reason.
void write_text(const std::string& path, const std::string& text);

// True when the two paths name one file: compared after following symlinks (also a dangling
// last link, which a write would create) and making them absolute; hard links count as one.
bool same_file(const std::string& a, const std::string& b);

}  // namespace dfmp2
