// The run's report: readable text for stdout, and the JSON file.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "src/run/run_result.hpp"

namespace dfmp2 {

void print_report(std::ostream& out, const RunResult& result);
nlohmann::json to_json(const RunResult& result);

}  // namespace dfmp2
