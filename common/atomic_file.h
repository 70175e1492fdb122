// Writes a file atomically: contents go to a temporary file in the same folder,
// are flushed to disk, then renamed over the target. A failure leaves the old
// file (or no file) and never a half-written one.
#pragma once
#include <string>
#include <string_view>

namespace strata {

// Throws InputError if the folder is missing or not writable.
void write_file_atomic(const std::string& path, std::string_view contents);

// Reads a whole file; throws InputError naming the path if it cannot be read.
std::string read_file(const std::string& path);

// "-" means stdout for writers; returns true if path is "-".
inline bool is_stdio(const std::string& path) { return path == "-"; }

}  // namespace strata
