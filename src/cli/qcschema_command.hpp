// `dfmp2 qcschema [input.json] [-o result.json]`: a QCSchema AtomicInput in (a file, or stdin),
// its AtomicResult out (a file, all or nothing, or stdout). What QCEngine's harness for dfmp2
// (python/dfmp2) and the ASE calculator run.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace dfmp2 {

struct QcschemaArgs {
  std::string input = "-", output = "-";  // "-": stdin, stdout
  std::string memory;                      // the budget when the input's keywords set none
  int threads = 0;
  bool quiet = false;
};

CLI::App* add_qcschema_command(CLI::App& app, QcschemaArgs& args);

// Runs the input and writes the result. An input dfmp2 cannot run (or a run that fails) still
// gets a result, with success false and the error, and the error's line on stderr: returns 1
// then, else 0. Throws InputError only when the input cannot be read or the result not written,
// and, under MPI, for any error (then no result: every rank stops, as in a run of the CLI).
int run_qcschema_command(const QcschemaArgs& args);

}  // namespace dfmp2
