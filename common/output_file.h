// Where command output goes: stdout for results (also `-` as a path), files written
// atomically (a failed command leaves no half-written file), stderr for the rest.
#pragma once
#include <string>
#include <vector>

namespace strata {

// One path-valued flag of a command: a file it writes (outputs) or reads (inputs).
struct PathFlag {
  std::string path;  // as given; empty means the flag was not given
  std::string flag;  // "--out", "--model", ...
};

// The one output-path rule every command calls before it opens anything: an output that
// is the same file as one of the command's inputs, or as another of its outputs, is
// refused with one InputError naming both flags (exit 2). Same file means
// std::filesystem::equivalent when both exist (hard links, symlinks, `a/../b`), else the
// same path once symbolic links (dangling ones too) are resolved. Inputs that are not
// files (catalog names) never match; a folder input (a HuggingFace model folder) matches
// an output at its config.json. Character devices (`/dev/null`) may be shared; two
// outputs on stdout (`-`) may not.
void check_path_aliasing(const std::vector<PathFlag>& outputs, const std::vector<PathFlag>& inputs);

// Fails early (before a long search) when `path` cannot be written: its folder is
// missing or not writable, or it is a folder, or check_replaceable refuses it. `flag`
// names the option in the error.
void check_output_path(const std::string& path, const char* flag, const char* own_marker = nullptr);
// An existing non-empty file is replaced only when it is strata's own kind of output
// ("strata" in its first 64 KiB: every plan, profile, report, trace, export and CSV
// strata writes names itself; its JSON documents carry "schema_version"; a metrics file
// starts with a {"step": ...} line),
// or when --force was given: a typo in an output path must not destroy a user's file.
// `own_marker`: text that marks the command's own kind where a format cannot name strata
// (a DeepSpeed JSON config holds no comments).
void check_replaceable(const std::string& path, const char* flag, const char* own_marker = nullptr);
// --force on the command line (every command has it).
void set_force_overwrite(bool force);
// "-" writes to stdout; otherwise check_replaceable, then write_file_atomic. Errors name
// the flag.
void write_output(const std::string& path, const std::string& contents, const char* flag,
                  const char* own_marker = nullptr);
// Writes to stdout and flushes; a failed write (disk full, closed pipe) is an InputError.
void print_stdout(const std::string& text);
// Warnings and progress go to stderr ("warning: ..." lines).
void warn(const std::string& text);
// True when stderr is a terminal (progress bars only then).
bool stderr_is_tty();

}  // namespace strata
