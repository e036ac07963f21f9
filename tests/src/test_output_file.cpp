// Output files all or nothing: temporaries renamed together, removed on failure and on signals,
// written through symlinks; same_file sees one file behind different names.
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <stdexcept>

#include <sys/wait.h>
#include <unistd.h>

#include "src/common/errors.hpp"
#include "src/io/output_file.hpp"
#include "tests/src/run_command.hpp"

using namespace dfmp2;
namespace fs = std::filesystem;

namespace {

FileWriter text_writer(const std::string& text) {
  return [text](const std::string& path) { write_text(path, text); };
}

// Every name in the directory, sorted.
std::vector<std::string> names_in(const TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path("")))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("a set of outputs appears only at commit, complete, with no temporary left") {
  TempDir dir;
  {
    OutputFiles files;
    files.add(dir.path("a.json"), text_writer("first\n"));
    files.add(dir.path("b.h5"), text_writer("second\n"));
    CHECK_FALSE(fs::exists(dir.path("a.json")));
    CHECK_FALSE(fs::exists(dir.path("b.h5")));
    CHECK(names_in(dir).size() == 2);  // the two temporaries
    files.commit();
  }
  CHECK(read_text(dir.path("a.json")) == "first\n");
  CHECK(read_text(dir.path("b.h5")) == "second\n");
  CHECK(names_in(dir) == std::vector<std::string>{"a.json", "b.h5"});
}

TEST_CASE("when one output fails, no output of the set is written and old files stay") {
  TempDir dir;
  dir.write("a.json", "old\n");
  {
    OutputFiles files;
    files.add(dir.path("a.json"), text_writer("new\n"));
    CHECK_THROWS_WITH(files.add(dir.path("b.h5"),
                                [](const std::string& path) {
                                  write_text(path, "half");
                                  throw std::runtime_error("disk on fire");
                                }),
                      "cannot write '" + dir.path("b.h5") + "': disk on fire");
  }  // never committed
  CHECK(read_text(dir.path("a.json")) == "old\n");
  CHECK(names_in(dir) == std::vector<std::string>{"a.json"});
}

TEST_CASE("a missing directory or a directory as the target is refused before writing") {
  TempDir dir;
  fs::create_directory(dir.path("sub"));
  bool wrote = false;
  const FileWriter spy = [&](const std::string&) { wrote = true; };
  CHECK_THROWS_WITH(write_output_file(dir.path("no/such/out.h5"), spy),
                    Catch::StartsWith("cannot write '" + dir.path("no/such/out.h5") +
                                      "': directory '") &&
                        Catch::EndsWith("no/such' does not exist"));
  CHECK_THROWS_WITH(write_output_file(dir.path("sub"), spy),
                    "cannot write '" + dir.path("sub") + "': it is a directory");
  CHECK_FALSE(wrote);
}

TEST_CASE("a rename failing at commit removes the outputs already renamed") {
  TempDir dir;
  OutputFiles files;
  files.add(dir.path("a.json"), text_writer("a\n"));
  files.add(dir.path("b.h5"), text_writer("b\n"));
  // b.h5 becomes a non-empty directory after it was checked: its rename must fail.
  fs::create_directories(dir.path("b.h5/inside"));
  CHECK_THROWS_WITH(files.commit(), Catch::StartsWith("cannot write '" + dir.path("b.h5") +
                                                      "': cannot rename the temporary file"));
  CHECK_FALSE(fs::exists(dir.path("a.json")));
}

TEST_CASE("an output that is a symlink is written through it, and the link stays") {
  TempDir dir;
  fs::create_directory(dir.path("data"));
  dir.write("data/old.json", "old\n");
  fs::create_symlink("data/old.json", dir.path("link.json"));
  fs::create_symlink(dir.path("link.json"), dir.path("link-to-link.json"));
  fs::create_symlink("data/new.h5", dir.path("dangling.h5"));  // writing creates its target
  OutputFiles files;
  files.add(dir.path("link-to-link.json"), text_writer("json\n"));
  files.add(dir.path("dangling.h5"), text_writer("h5\n"));
  files.commit();
  CHECK(fs::is_symlink(dir.path("link.json")));
  CHECK(fs::is_symlink(dir.path("link-to-link.json")));
  CHECK(fs::is_symlink(dir.path("dangling.h5")));
  CHECK(read_text(dir.path("data/old.json")) == "json\n");
  CHECK(read_text(dir.path("data/new.h5")) == "h5\n");
  CHECK(names_in(dir) ==
        std::vector<std::string>{"dangling.h5", "data", "link-to-link.json", "link.json"});
}

TEST_CASE("same_file compares where writes land: relative, absolute, symlinks, hard links") {
  TempDir dir;
  const std::string input = dir.write("in.h5", "x");
  fs::create_directory(dir.path("sub"));
  fs::create_symlink(input, dir.path("link.h5"));
  fs::create_hard_link(input, dir.path("hard.h5"));
  fs::create_symlink("sub/later.json", dir.path("dangling.json"));
  const std::string cwd = fs::current_path().string();
  fs::current_path(dir.path(""));
  CHECK(same_file("in.h5", input));
  CHECK(same_file("./sub/../in.h5", "in.h5"));
  CHECK(same_file("link.h5", "in.h5"));
  CHECK(same_file("hard.h5", input));
  CHECK(same_file("out.json", dir.path("out.json")));  // neither exists yet
  CHECK(same_file("dangling.json", "sub/later.json"));
  CHECK_FALSE(same_file("in.h5", "out.json"));
  CHECK_FALSE(same_file("", ""));
  fs::current_path(cwd);
}

TEST_CASE("SIGTERM or SIGINT while a set is being written removes its temporaries") {
  for (int signal : {SIGTERM, SIGINT}) {
    INFO("signal " << signal);
    TempDir dir;
    int ready[2], never[2];
    REQUIRE(pipe(ready) == 0);
    REQUIRE(pipe(never) == 0);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // one output complete, the second half written when the signal comes
      std::signal(signal, SIG_DFL);  // as in dfmp2: Catch2's handler would report a failure
      OutputFiles files;
      files.add(dir.path("a.json"), text_writer("a\n"));
      files.add(dir.path("b.h5"), [&](const std::string& path) {
        write_text(path, "half");
        char byte = 1;
        if (write(ready[1], &byte, 1) != 1) _exit(2);
        (void)!read(never[0], &byte, 1);  // blocks: nobody writes to `never`
      });
      _exit(3);
    }
    char byte = 0;
    REQUIRE(read(ready[0], &byte, 1) == 1);
    CHECK(names_in(dir).size() == 2);
    kill(child, signal);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal);
    CHECK(names_in(dir).empty());
    for (int fd : {ready[0], ready[1], never[0], never[1]}) close(fd);
  }
}
