#include "validation/validate_runner.h"
#include "common/json_text.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
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

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argp[0], &fa, &attr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw DeviceError(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));

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
