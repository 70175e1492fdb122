// Where command output goes: stdout for results (also `-` as a path), files written
// atomically (a failed command leaves no half-written file), stderr for the rest.
#pragma once
#include <string>

namespace strata::cli {

// Fails early (before a long search) when `path` cannot be written: its folder is
// missing or not writable, or it is a folder. `flag` names the option in the error.
void check_output_path(const std::string& path, const char* flag);
// "-" writes to stdout; otherwise write_file_atomic. Errors name the flag.
void write_output(const std::string& path, const std::string& contents, const char* flag);
// Writes to stdout and flushes; a failed write (disk full, closed pipe) is an InputError.
void print_stdout(const std::string& text);
// Warnings and progress go to stderr ("warning: ..." lines).
void warn(const std::string& text);
// True when stderr is a terminal (progress bars only then).
bool stderr_is_tty();

}  // namespace strata::cli
