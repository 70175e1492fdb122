// Writes output files without clobbering what the path names.
//
// - A regular file (or a path that does not exist yet) is written atomically: the
//   contents go to a temporary file in the same folder, are flushed to disk, then
//   renamed over the target. A failure leaves the old file (or no file) and never a
//   half-written one. An existing file keeps its permission bits.
// - A symbolic link is followed: the file it points to is written (atomically, in the
//   target's folder) and the link itself stays a link, also when it dangles.
// - A character device or a FIFO is opened and written directly (no rename), the way a
//   shell redirection writes it: `--out /dev/null` stays the null device. A FIFO with no
//   reader is refused at once instead of blocking.
// - A folder, a block device, a socket, an empty path and a symlink loop are refused
//   by name (InputError).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace strata {

// Throws InputError if the folder is missing or not writable, or the path is refused.
void write_file_atomic(const std::string& path, std::string_view contents);

// The checks write_file_atomic makes before writing anything, for commands that want to
// fail before a long computation: the path is not empty, not a folder / block device /
// socket / symlink loop, and (for a file written by rename) its folder exists and is
// writable. A FIFO is not opened here (opening and closing it would end its reader's
// input). Throws InputError naming the path.
void check_output_target(const std::string& path);

// Largest input file read_file accepts (model, cluster, profile, plan, manifest,
// measured results): 256 MiB. Larger files are refused with an error naming the cap.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{256} << 20;

// Reads a whole file; throws InputError naming the path if it cannot be read, is a
// folder, or holds more than `max_bytes`.
std::string read_file(const std::string& path, std::size_t max_bytes = kMaxInputFileBytes);

// "-" means stdout for writers; returns true if path is "-".
inline bool is_stdio(const std::string& path) { return path == "-"; }

}  // namespace strata
