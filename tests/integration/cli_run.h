// Runs the built `strata` binary (path from the STRATA_EXE compile definition) with
// a timeout, capturing stdout, stderr and the exit status. posix_spawn, no shell, so
// arguments are passed exactly as given.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/text_lines.h"

extern char** environ;

namespace strata::testing {

struct RunResult {
  int exit_code = -1;     // valid when !signaled && !timed_out
  bool signaled = false;  // killed by a signal (crash)
  int signal = 0;
  bool timed_out = false;
  std::string out, err;
  double wall_s = 0;

  std::vector<std::string> err_lines() const { return lines_of(err); }
  // The lines of stderr that start with "error:" (a failed command prints exactly one).
  std::vector<std::string> error_lines() const {
    std::vector<std::string> errors;
    for (const auto& l : err_lines())
      if (l.rfind("error:", 0) == 0) errors.push_back(l);
    return errors;
  }
};

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `exe args...` in `cwd` (if not empty), killing it after `timeout_s`. `env` holds
// extra "NAME=value" entries added to (or overriding) this process' environment.
inline RunResult run_program(const std::string& exe, const std::vector<std::string>& args,
                             double timeout_s = 120, const std::string& cwd = "",
                             const std::vector<std::string>& env = {}) {
  namespace fs = std::filesystem;
  static std::atomic<int> counter{0};  // tests call this from several threads at once
  fs::path tmp = fs::temp_directory_path() /
                 ("strata_run_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::create_directories(tmp);
  std::string out_path = (tmp / "stdout").string(), err_path = (tmp / "stderr").string();

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  std::vector<std::string> argv_s = {exe};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  // Open MPI's session directory in this call's own folder: ctest runs MPI jobs side by side,
  // and Open MPI 4 creates and removes a shared tree under TMPDIR that they race ("A call to
  // mkdir was unable to create the desired directory ... File exists", open-mpi/ompi#8510).
  // `env` may still set either variable (empty: unset for the child's purposes).
  std::vector<std::string> env_s = env;
  for (const char* var : {"OMPI_MCA_orte_tmpdir_base", "PRTE_MCA_prte_tmpdir_base"}) {
    bool given = false;
    for (const auto& x : env) given |= x.substr(0, x.find('=')) == var;
    if (!given) env_s.push_back(std::string(var) + "=" + tmp.string());
  }
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string name = kv.substr(0, kv.find('='));
    bool overridden = false;
    for (const auto& x : env_s) overridden |= x.substr(0, x.find('=')) == name;
    if (!overridden) env_s.push_back(kv);
  }
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);

  RunResult r;
  auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("posix_spawn " + exe + " failed: " + std::to_string(rc));
  int status = 0;
  while (true) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (el > timeout_s) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r.timed_out) {
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
      r.signaled = true;
      r.signal = WTERMSIG(status);
    }
  }
  r.out = read_all(out_path);
  r.err = read_all(err_path);
  // An MPI job's session files may still be going away as the folder is removed: once more
  // when the first pass met one that vanished under it.
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (ec) fs::remove_all(tmp, ec);
  return r;
}

#ifdef STRATA_SOURCE_DIR
// Extra environment for a child that calls MPI_Init (`strata train`, `strata calibrate`),
// for the sanitizer build: LeakSanitizer stays on, but what Open MPI allocates in MPI_Init
// and keeps until exit is suppressed (tests/lsan-openmpi.supp lists only Open MPI's
// libraries). Those libraries have no frame pointers and unload their components at
// exit, so only full malloc stacks (the slow unwinder) reach a libmpi / libopen-pal /
// libopen-rte frame the suppressions can match. Thread-local storage is not scanned as a
// root (use_tls=0): LeakSanitizer's scan of the dynamic TLS of Open MPI's components crashed
// its tracer in ScanRangeForPointers on a bogus range (clang 14 runtime; seen on the dev host
// on 2026-12-07, with binaries that had passed an hour before). Dropping a root can only
// report more leaks, never hide one. Appended to any ASAN_OPTIONS / LSAN_OPTIONS already set;
// without sanitizers nothing reads these variables.
inline std::vector<std::string> mpi_child_env() {
  auto with = [](const char* name, const std::string& opts) {
    const char* old = std::getenv(name);
    return std::string(name) + "=" + (old && *old ? std::string(old) + ":" : "") + opts;
  };
  return {with("LSAN_OPTIONS", "suppressions=" STRATA_SOURCE_DIR "/tests/lsan-openmpi.supp:print_suppressions=0:use_tls=0"),
          with("ASAN_OPTIONS", "fast_unwind_on_malloc=0")};
}
#endif

inline RunResult run_strata(const std::vector<std::string>& args, double timeout_s = 120,
                            const std::string& cwd = "", const std::vector<std::string>& env = {}) {
  return run_program(STRATA_EXE, args, timeout_s, cwd, env);
}

}  // namespace strata::testing
