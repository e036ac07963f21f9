#include "src/cli/qcschema_command.hpp"

#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

#include <omp.h>

#include "src/common/errors.hpp"
#include "src/common/memory.hpp"
#include "src/common/parallel.hpp"
#include "src/io/output_file.hpp"
#include "src/io/qcschema.hpp"
#include "src/io/report.hpp"
#include "src/run/driver.hpp"

namespace dfmp2 {
namespace {

using nlohmann::json;

std::string read_all(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path);
  if (!in) throw InputError("cannot read the QCSchema input '" + path + "'");
  text << in.rdbuf();
  return text.str();
}

// QCEngine's error type and the message of an exception from reading or running the input.
std::pair<const char*, std::string> classify(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const ConvergenceError& e) {
    return {"convergence_error", e.what()};
  } catch (const InputError& e) {
    return {"input_error", e.what()};
  } catch (const std::invalid_argument& e) {
    return {"input_error", e.what()};
  } catch (const std::bad_alloc&) {
    return {"resource_error", "out of memory (lower the problem size or keywords.memory)"};
  } catch (const std::exception& e) {
    return {"unknown_error", std::string("internal: ") + e.what()};
  }
}

// The run's AtomicResult, or the failed one with the error's QCEngine type; `error` gets the
// message then. Under MPI an error is rethrown: one rank's failure must stop them all (main
// aborts them), where a result written by rank 0 alone would leave the others waiting.
json result_of(const json& input, std::size_t memory_bytes, bool quiet, std::string& error) {
  try {
    QcschemaJob job = read_atomic_input(input);
    if (job.options.memory_bytes == 0) job.options.memory_bytes = memory_bytes;
    Progress progress(quiet || !Communicator::world().is_root());
    const RunResult result = run(job.input, job.options, progress);
    std::ostringstream report;
    print_report(report, result);
    return atomic_result(input, job.method, result, report.str());
  } catch (...) {
    if (Communicator::world().size() > 1) throw;
    const auto [type, message] = classify(std::current_exception());
    error = message;
    return failed_result(input, type, message);
  }
}

}  // namespace

CLI::App* add_qcschema_command(CLI::App& app, QcschemaArgs& args) {
  auto* command = app.add_subcommand("qcschema", "run a QCSchema AtomicInput (JSON), write its AtomicResult");
  command->add_option("input", args.input, "AtomicInput JSON file (default -: stdin)");
  command->add_option("-o,--output", args.output, "AtomicResult JSON file (default -: stdout)");
  command->add_option("--memory", args.memory, "memory budget when the input's keywords give none, e.g. 8GB")
      ->type_name("SIZE");
  command->add_option("--threads", args.threads, "OpenMP threads (default: OMP_NUM_THREADS or all cores)")
      ->check(CLI::Range(1, 4096));
  command->add_flag("--quiet,-q", args.quiet, "no progress on stderr");
  return command;
}

int run_qcschema_command(const QcschemaArgs& args) {
  if (args.input != "-" && args.output != "-" && same_file(args.input, args.output))
    throw InputError("the result would overwrite the input '" + args.input + "'");
  if (args.input == "-" && Communicator::world().size() > 1)
    throw InputError("under MPI give the QCSchema input as a file: only rank 0 reads stdin");
  const std::size_t memory_bytes = args.memory.empty() ? 0 : parse_memory(args.memory);
  if (args.threads > 0) omp_set_num_threads(args.threads);
  const std::string text = read_all(args.input);
  json input;
  std::string error;
  json result;
  try {
    input = json::parse(text);
    result = result_of(input, memory_bytes, args.quiet, error);
  } catch (const json::parse_error& e) {
    error = std::string("the input is not JSON: ") + e.what();
    result = failed_result(input, "input_error", error);
  }
  if (!Communicator::world().is_root()) return error.empty() ? 0 : 1;
  const std::string document = result.dump(2) + "\n";
  if (args.output == "-")
    std::cout << document << std::flush;
  else
    write_output_file(args.output, [&](const std::string& file) { write_text(file, document); });
  if (error.empty()) return 0;
  std::cerr << "dfmp2: error: " << error << "\n";
  return 1;
}

}  // namespace dfmp2
