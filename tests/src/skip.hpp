// A test case that cannot run here says so, and CTest reports it as skipped rather than passed:
// tests/src/CMakeLists.txt gives the cases SKIP_REGULAR_EXPRESSION "SKIPPED: ", and
// scripts/test.sh counts these lines.
#pragma once

#include <iostream>
#include <string>

// Prints "SKIPPED: <reason>" on its own line; the caller then returns from the case.
inline void report_skipped(const std::string& reason) { std::cout << "\nSKIPPED: " << reason << std::endl; }
