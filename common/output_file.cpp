#include "common/output_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace strata {

namespace {
bool g_force_overwrite = false;
}  // namespace

void set_force_overwrite(bool force) { g_force_overwrite = force; }

void check_replaceable(const std::string& path, const char* flag, const char* own_marker) {
  if (g_force_overwrite || path.empty() || is_stdio(path)) return;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) == 0 || ec) return;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return;  // unreadable: the write itself will say why
  std::string head(64 * 1024, '\0');
  head.resize(std::fread(head.data(), 1, head.size(), f));
  std::fclose(f);
  // strata's JSON documents (compare, validate, plan --format json) carry a schema_version.
  if (head.find("strata") != std::string::npos || head.find("\"schema_version\"") != std::string::npos) return;
  if (own_marker && head.find(own_marker) != std::string::npos) return;
  if (std::string(flag) == "--metrics" && head.rfind("{\"step\":", 0) == 0) return;
  input_error("{} {}: the file exists and is not a strata output (no \"strata\" in its first 64 KiB); "
              "pass --force to replace it, or choose another path",
              flag, path);
}

void check_output_path(const std::string& path, const char* flag, const char* own_marker) {
  if (path.empty())
    input_error("{}: expected a file path or - for stdout, got an empty string", flag);
  if (is_stdio(path)) return;
  try {
    check_output_target(path);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", flag, e.what()));
  }
  check_replaceable(path, flag, own_marker);
}

namespace aliasing {  // named, not anonymous: the unity build joins the common sources

namespace fs = std::filesystem;

// The path a file flag names with every symbolic link resolved, dangling ones included
// (weakly_canonical stops at a link whose target does not exist yet; write_file_atomic
// writes through it, so the file written is the link's target). Loops end after 40 links.
fs::path resolved(const std::string& given) {
  std::error_code ec;
  fs::path p = fs::absolute(given, ec);
  if (ec) return fs::path(given).lexically_normal();
  for (int hops = 0; hops < 40; ++hops) {
    const fs::path parent = fs::weakly_canonical(p.parent_path(), ec);
    if (!ec) p = parent / p.filename();
    if (!fs::is_symlink(fs::symlink_status(p, ec))) break;
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) break;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  const fs::path c = fs::weakly_canonical(p, ec);
  return (ec ? p : c).lexically_normal();
}

bool is_char_device(const std::string& path) {
  std::error_code ec;
  return fs::is_character_file(fs::status(path, ec));
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ea, eb, ec;
  if (fs::exists(a, ea) && fs::exists(b, eb)) {
    const bool eq = fs::equivalent(a, b, ec);
    if (!ec) return eq;
  }
  return resolved(a) == resolved(b);
}

// The file an input flag reads: the path, or for a folder its config.json (a HuggingFace
// model folder); nothing for a value that names no file (a catalog name).
std::optional<std::string> input_file(const std::string& path) {
  if (path.empty() || is_stdio(path)) return std::nullopt;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) return (fs::path(path) / "config.json").string();
  if (fs::exists(st)) return path;
  // A dangling link or a name that resolves to nothing is no file yet: nothing to destroy.
  return std::nullopt;
}

}  // namespace aliasing

void check_path_aliasing(const std::vector<PathFlag>& outputs, const std::vector<PathFlag>& inputs) {
  using aliasing::input_file;
  using aliasing::is_char_device;
  using aliasing::same_file;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const PathFlag& o = outputs[i];
    if (o.path.empty()) continue;
    const bool to_stdout = is_stdio(o.path);
    const bool device = !to_stdout && is_char_device(o.path);
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      const PathFlag& p = outputs[j];
      if (p.path.empty()) continue;
      if (to_stdout || is_stdio(p.path)) {
        if (to_stdout && is_stdio(p.path))
          input_error("{} - and {} - both write to standard output, which would mix two documents; "
                      "send one of them to a file",
                      o.flag, p.flag);
        continue;
      }
      if (!device && same_file(o.path, p.path))
        input_error("{} {} and {} {} are the same file: each output needs its own path", o.flag,
                    o.path, p.flag, p.path);
    }
    if (to_stdout || device) continue;
    for (const PathFlag& in : inputs) {
      const std::optional<std::string> file = input_file(in.path);
      if (file && same_file(o.path, *file))
        input_error("{} {} is the same file as the input {} {}: writing it would destroy the input; "
                    "choose another output path",
                    o.flag, o.path, in.flag, in.path);
    }
  }
}

void write_output(const std::string& path, const std::string& contents, const char* flag,
                  const char* own_marker) {
  if (is_stdio(path)) {
    print_stdout(contents);
    return;
  }
  check_replaceable(path, flag, own_marker);
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

}  // namespace strata
