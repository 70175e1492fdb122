#include "common/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.h"

namespace strata {

namespace {

namespace fs = std::filesystem;

// How an output path is written.
enum class WriteMode { kRename, kDirect };

struct OutputTarget {
  WriteMode mode = WriteMode::kRename;
  std::string path;     // the file written: the symlink's target when `path` is a link
  bool exists = false;  // kRename: a regular file is there already
  mode_t perms = 0644;  // kRename: its permission bits, kept on replace
};

// Follows a chain of symbolic links to the path they end at, which need not exist
// (a dangling link names the file to create). Relative links resolve against the
// folder that holds them.
std::string follow_links(const std::string& path) {
  std::string cur = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(cur.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
    std::string buf(4096, '\0');
    ssize_t n = ::readlink(cur.c_str(), buf.data(), buf.size());
    if (n < 0 || static_cast<size_t>(n) >= buf.size())
      input_error("cannot write {}: cannot read the symbolic link {}: {}", path, cur,
                  n < 0 ? std::strerror(errno) : "link text too long");
    buf.resize(static_cast<size_t>(n));
    fs::path link(buf);
    fs::path here(cur);
    cur = link.is_absolute() ? link.string()
                             : ((here.has_parent_path() ? here.parent_path() : fs::path(".")) / link).string();
  }
  input_error("cannot write {}: too many levels of symbolic links", path);
}

const char* kind_name(mode_t m) {
  if (S_ISDIR(m)) return "a folder";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISFIFO(m)) return "a FIFO";
  return "not a regular file";
}

// Classifies `path` without writing: where the bytes go and how.
OutputTarget resolve_output(const std::string& path) {
  if (path.empty()) input_error("output path is empty: expected a file path");
  OutputTarget t;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    // stat follows links, also the kernel's /proc/self/fd ones, so this is the type of
    // whatever the path ends at.
    if (S_ISREG(st.st_mode)) {
      std::error_code ec;
      fs::path real = fs::canonical(path, ec);
      t.path = ec ? follow_links(path) : real.string();
      t.exists = true;
      t.perms = st.st_mode & 07777;
      return t;
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      t.mode = WriteMode::kDirect;
      t.path = path;
      return t;
    }
    if (S_ISDIR(st.st_mode))
      input_error("cannot write {}: it is a folder, expected a file path", path);
    input_error("cannot write {}: it is {}; strata writes regular files, character devices "
                "and FIFOs only", path, kind_name(st.st_mode));
  }
  if (errno == ELOOP) input_error("cannot write {}: too many levels of symbolic links", path);
  if (errno != ENOENT)
    input_error("cannot write {}: {}", path, std::strerror(errno));
  // Not there yet (or a dangling link): created by rename where the link chain ends.
  t.path = follow_links(path);
  if (!t.path.empty() && t.path.back() == '/')
    input_error("cannot write {}: it names a folder, expected a file path", path);
  return t;
}

fs::path folder_of(const std::string& path) {
  fs::path p(path);
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

void check_folder(const std::string& shown, const OutputTarget& t) {
  fs::path dir = folder_of(t.path);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    input_error("cannot write {}: folder {} does not exist", shown, dir.string());
  if (::access(dir.c_str(), W_OK) != 0)
    input_error("cannot write {}: folder {} is not writable ({})", shown, dir.string(),
                std::strerror(errno));
}

// write(2) everything, with SIGPIPE held back on this thread so a reader that went away
// is an error (EPIPE) instead of killing the process.
int write_all(int fd, std::string_view contents) {
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  int err = 0;
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (err == EPIPE) {
    // Take the pending SIGPIPE this write raised before unblocking.
    struct timespec zero {};
    while (sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  return err;
}

void write_direct(const std::string& path, std::string_view contents) {
  // O_NONBLOCK so a FIFO without a reader fails (ENXIO) instead of waiting forever;
  // blocking is restored for the writes themselves. No O_TRUNC, no rename: the device
  // or FIFO stays what it is.
  int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENXIO)
      input_error("cannot write {}: it is a FIFO with no reader (start the reader first, or "
                  "write to a regular file)", path);
    input_error("cannot write {}: {}", path, std::strerror(errno));
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  int err = write_all(fd, contents);
  if (::close(fd) != 0 && err == 0 && errno != EINTR) err = errno;
  if (err != 0) input_error("cannot write {}: {}", path, std::strerror(err));
}

void write_renamed(const std::string& shown, const OutputTarget& t, std::string_view contents) {
  check_folder(shown, t);
  fs::path target(t.path);
  // Built by appending: GCC 12's -Wrestrict misreads the inlined "." + std::string.
  std::string name = ".";
  name += target.filename().string();
  name += ".tmpXXXXXX";
  std::string tmpl = (folder_of(t.path) / name).string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) input_error("cannot write {}: {}", shown, std::strerror(errno));
  int err = write_all(fd, contents);
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmpl.c_str());
    input_error("cannot write {}: {}", shown, std::strerror(err));
  }
  ::chmod(tmpl.c_str(), t.perms);
  if (std::rename(tmpl.c_str(), t.path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmpl.c_str());
    input_error("cannot write {}: {}", shown, std::strerror(e));
  }
}

}  // namespace

void check_output_target(const std::string& path) {
  OutputTarget t = resolve_output(path);
  if (t.mode == WriteMode::kRename) check_folder(path, t);
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  OutputTarget t = resolve_output(path);
  if (t.mode == WriteMode::kDirect)
    write_direct(path, contents);
  else
    write_renamed(path, t, contents);
}

std::string read_file(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) input_error("file not found: {}", path);
  if (std::filesystem::is_directory(path, ec)) input_error("{} is a folder, expected a file", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) input_error("cannot read {}: {}", path, std::strerror(errno));
  // Read in bounded chunks so a huge file (or an endless FIFO / device) is refused at the
  // cap instead of filling memory.
  std::string out;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    std::streamsize n = in.gcount();
    if (n <= 0) break;
    if (out.size() + static_cast<std::size_t>(n) > max_bytes)
      input_error("{} is larger than {}, the most strata reads from an input file", path,
                  max_bytes >= (std::size_t{1} << 20) ? fmt::format("{} MiB", max_bytes >> 20)
                                                       : fmt::format("{} bytes", max_bytes));
    out.append(buf, static_cast<std::size_t>(n));
  }
  if (in.bad()) input_error("cannot read {}: {}", path, std::strerror(errno));
  return out;
}

}  // namespace strata
