#include "validation/validate_runner.h"
#include "common/json_text.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "common/stop_signals.h"

extern char** environ;

namespace strata::validation {

std::vector<StepMetric> parse_metrics_jsonl(const std::string& text, const std::string& source) {
  std::vector<StepMetric> out;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (std::all_of(line.begin(), line.end(), [](unsigned char c) { return std::isspace(c); })) continue;
    nlohmann::json j;
    try {
      j = strata::parse_json(line);
    } catch (const nlohmann::json::exception& e) {
      input_error("{}:{}: not a JSON object: {}", source, lineno, e.what());
    }
    if (!j.is_object()) input_error("{}:{}: expected a JSON object per line", source, lineno);
    auto num = [&](const char* key, bool required) -> double {
      if (!j.contains(key) || j[key].is_null()) {
        if (required) input_error("{}:{}: missing \"{}\"", source, lineno, key);
        return 0.0;
      }
      if (!j[key].is_number()) input_error("{}:{}: \"{}\" is not a number", source, lineno, key);
      return j[key].get<double>();
    };
    StepMetric m;
    m.step = static_cast<int>(num("step", true));
    m.step_s = num("step_s", true);
    m.loss = num("loss", false);
    m.tokens_per_s = num("tokens_per_s", false);
    m.predicted_step_s = num("predicted_step_s", false);
    m.gemm_s = num("gemm_s", false);
    out.push_back(m);
  }
  std::stable_sort(out.begin(), out.end(), [](const StepMetric& a, const StepMetric& b) { return a.step < b.step; });
  return out;
}

ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::vector<std::pair<std::string, std::string>>& env, double timeout_s,
                          const std::string& log_path) {
  STRATA_CHECK(!argv.empty());
  // Environment: ours, with `env` overriding.
  std::map<std::string, std::string> vars;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) vars[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : vars) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);

  // The program's path, found before fork: the child only calls async-signal-safe functions.
  std::string program = argv[0];
  if (program.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');) {
      const std::string candidate = (d.empty() ? "." : d) + "/" + program;
      if (::access(candidate.c_str(), X_OK) == 0) {
        program = candidate;
        break;
      }
    }
  }
  if (::access(program.c_str(), X_OK) != 0)
    throw DeviceError(fmt::format("cannot start {}: {}", argv[0], std::strerror(errno)));
  const pid_t parent = ::getpid();
  // fork + exec rather than posix_spawn: the child (mpirun) must get SIGTERM when strata
  // dies, even by SIGKILL, which no handler sees (prctl PR_SET_PDEATHSIG survives exec);
  // mpirun then ends its ranks. Its own process group lets a timeout or a forwarded
  // signal reach the whole job.
  const pid_t pid = ::fork();
  if (pid < 0) throw DeviceError(fmt::format("cannot start {}: fork: {}", argv[0], std::strerror(errno)));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);  // strata died before the prctl
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execve(program.c_str(), argp.data(), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: a signal to the group right after fork must find it

  ProcessResult result;
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  bool term_sent = false;
  auto term_time = start;
  while (true) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) throw DeviceError(fmt::format("waitpid failed: {}", std::strerror(errno)));
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    // A SIGINT/SIGTERM to strata (common/stop_signals.h) ends the child's group as a
    // timeout does: the group is ours, the terminal's signal reached only strata.
    if (!term_sent && (elapsed > timeout_s || stop_signal() != 0)) {
      result.timed_out = stop_signal() == 0;
      kill(-pid, SIGTERM);
      term_sent = true;
      term_time = now;
    } else if (term_sent && std::chrono::duration<double>(now - term_time).count() > 3.0) {
      kill(-pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  // Stragglers of the group (none when mpirun cleaned up) must not outlive the run.
  if (term_sent) kill(-pid, SIGKILL);
  throw_if_stopped();

  std::ifstream log(log_path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  constexpr std::size_t kKeep = 64 * 1024;
  result.log = text.size() > kKeep ? text.substr(text.size() - kKeep) : text;
  return result;
}

std::string first_error_line(const std::string& log) {
  std::istringstream in(log);
  std::string line, last;
  auto trim = [](std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    std::size_t b = 0;
    while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    s = s.substr(b);
    if (s.size() > 200) s = s.substr(0, 197) + "...";
    return s;
  };
  while (std::getline(in, line)) {
    std::string lower = line;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find("error") != std::string::npos) return trim(line);
    if (!trim(line).empty()) last = line;
  }
  return trim(last);
}

std::string self_executable() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw DeviceError("cannot read /proc/self/exe to find the strata binary (pass --strata PATH)");
  return std::string(buf, static_cast<std::size_t>(n));
}

}  // namespace strata::validation
