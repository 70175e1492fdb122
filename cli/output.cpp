#include "cli/output.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace strata::cli {

void check_output_path(const std::string& path, const char* flag) {
  if (path.empty())
    input_error("{}: expected a file path or - for stdout, got an empty string", flag);
  if (is_stdio(path)) return;
  try {
    check_output_target(path);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", flag, e.what()));
  }
}

void write_output(const std::string& path, const std::string& contents, const char* flag) {
  if (is_stdio(path)) {
    print_stdout(contents);
    return;
  }
  try {
    write_file_atomic(path, contents);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", flag, e.what()));
  }
}

void print_stdout(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
    input_error("cannot write to standard output: {}", std::strerror(errno));
}

void warn(const std::string& text) { fmt::print(stderr, "warning: {}\n", text); }

bool stderr_is_tty() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace strata::cli
