// Memory budget helpers: the machine's RAM, the default budget, and human-readable sizes.
#pragma once

#include <cstddef>
#include <string>

namespace dfmp2 {

std::size_t physical_memory_bytes();
// Half the machine's RAM: room for the OS and other jobs.
std::size_t default_memory_budget();
// "1.5 GiB", "300 MiB", "12 KiB".
std::string format_bytes(std::size_t bytes);
// "4GB", "500MiB", "2g", "1024" (bytes) → bytes; throws InputError when malformed.
std::size_t parse_memory(const std::string& text);
// Peak resident set size of this process so far.
std::size_t peak_rss_bytes();

}  // namespace dfmp2
