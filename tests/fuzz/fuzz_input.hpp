// For fuzz targets whose reader takes a path: the input bytes as a file, one per process,
// rewritten for every input and removed at exit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace dfmp2::fuzz {

inline std::string input_file(const std::uint8_t* data, std::size_t size, const std::string& suffix) {
  struct File {
    std::string path;
    ~File() { std::remove(path.c_str()); }
  };
  static const File file{(std::filesystem::temp_directory_path() /
                          ("dfmp2-fuzz-" + std::to_string(getpid()) + suffix))
                             .string()};
  std::FILE* out = std::fopen(file.path.c_str(), "wb");
  if (!out || std::fwrite(data, 1, size, out) != size || std::fclose(out) != 0) std::abort();
  return file.path;
}

}  // namespace dfmp2::fuzz
