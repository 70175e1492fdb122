// Every file-writing flag aimed at things that are not plain files: a FIFO (with and
// without a reader), a character device node (a copy of the null device made with mknod
// in a temp folder: never the real /dev), symbolic links, a folder, an empty path. The
// command either writes through (the FIFO's reader gets the bytes, the link's target
// gets the file) or answers one `error:` line with exit 2, never hangs, and the object
// at the path survives as it was (still a FIFO / device / link / folder).
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/cli_run.h"

namespace fs = std::filesystem;
using strata::testing::run_strata;

namespace {

enum class Target { kFifoWithReader, kFifoNoReader, kCharDevice, kSymlink, kDanglingSymlink,
                    kFolder, kEmpty };

struct Writer {
  const char* name;
  std::vector<std::string> args;  // "{out}" is the path under test, "{dir}" the temp folder
  const char* flag;               // named in the error
};

struct OutputCase {
  std::string name;
  Writer writer;
  Target target;
};

void PrintTo(const OutputCase& c, std::ostream* os) { *os << c.name; }

const std::vector<std::string> kSimulate = {"simulate", "--model", "tiny", "--cluster", "dgx-a100",
                                            "--tp", "2", "--pp", "2", "--dp", "1", "--global-batch", "8"};

std::vector<Writer> writers() {
  auto with = [](std::vector<std::string> a, std::vector<std::string> more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  return {
      {"simulate_out", with(kSimulate, {"--out", "{out}"}), "--out"},
      {"simulate_trace", with(kSimulate, {"--trace", "{out}"}), "--trace"},
      {"export_out", {"export", "--plan", "{dir}/p.yaml", "--to", "megatron", "--out", "{out}"}, "--out"},
      {"compare_report", {"compare", "--model", "tiny", "--cluster", "dgx-a100", "--gpus", "4", "--top", "2",
                          "--report", "{out}"}, "--report"},
  };
}

std::vector<OutputCase> output_cases() {
  const std::pair<const char*, Target> targets[] = {
      {"fifo_with_reader", Target::kFifoWithReader}, {"fifo_without_reader", Target::kFifoNoReader},
      {"char_device_copy", Target::kCharDevice},     {"symlink", Target::kSymlink},
      {"dangling_symlink", Target::kDanglingSymlink}, {"folder", Target::kFolder},
      {"empty_path", Target::kEmpty}};
  std::vector<OutputCase> out;
  for (const auto& w : writers())
    for (const auto& [tname, t] : targets) out.push_back({std::string(w.name) + "_" + tname, w, t});
  return out;
}

fs::file_type lstat_type(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type();
}

class OutputPathCli : public ::testing::TestWithParam<OutputCase> {};

TEST_P(OutputPathCli, WritesThroughOrRefusesAndKeepsTheTarget) {
  const OutputCase& c = GetParam();
  const fs::path dir = fs::temp_directory_path() / ("strata_outpath_cli_" + c.name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path out = dir / "out.file";
  if (c.writer.args[0] == "export") {
    std::vector<std::string> a = kSimulate;
    a.insert(a.end(), {"--out", (dir / "p.yaml").string()});
    auto w = run_strata(a);
    ASSERT_EQ(w.exit_code, 0) << w.err;
  }

  int reader = -1;
  fs::path written;  // regular file that must receive the output
  switch (c.target) {
    case Target::kFifoWithReader:
    case Target::kFifoNoReader:
      ASSERT_EQ(::mkfifo(out.c_str(), 0644), 0);
      // Non-blocking reader first: neither this test nor strata can block forever.
      if (c.target == Target::kFifoWithReader) { ASSERT_GE(reader = ::open(out.c_str(), O_RDONLY | O_NONBLOCK), 0); }
      break;
    case Target::kCharDevice: {
      if (::mknod(out.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
        GTEST_SKIP() << "mknod not permitted here (not root?)";
      const int probe = ::open(out.c_str(), O_WRONLY);
      if (probe < 0) {
        fs::remove_all(dir);
        GTEST_SKIP() << "device nodes cannot be opened in " << dir << " (nodev mount?)";
      }
      ::close(probe);
      break;
    }
    case Target::kSymlink:
      // An earlier strata output (a file strata did not write is refused without --force).
      std::ofstream(dir / "real.file") << "# old strata output\n";
      fs::create_symlink("real.file", out);
      written = dir / "real.file";
      break;
    case Target::kDanglingSymlink:
      fs::create_symlink(dir / "later.file", out);
      written = dir / "later.file";
      break;
    case Target::kFolder:
      fs::create_directories(out / "keep");
      break;
    case Target::kEmpty:
      break;
  }
  const fs::file_type before = lstat_type(out);

  // Drain the FIFO while strata runs (a trace can exceed the pipe's buffer).
  std::atomic<bool> done{false};
  std::string got;
  std::thread drain([&] {
    if (reader < 0) return;
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(reader, buf, sizeof buf);
      if (n > 0) {
        got.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (done) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  std::vector<std::string> args;
  for (std::string a : c.writer.args) {
    if (a == "{out}") a = c.target == Target::kEmpty ? "" : out.string();
    for (size_t p; (p = a.find("{dir}")) != std::string::npos;) a.replace(p, 5, dir.string());
    args.push_back(a);
  }
  auto r = run_strata(args, 60);
  done = true;
  drain.join();
  if (reader >= 0) ::close(reader);
  SCOPED_TRACE("strata " + ::testing::PrintToString(args) + "\nstderr:\n" + r.err);
  ASSERT_FALSE(r.timed_out) << "hung";
  ASSERT_FALSE(r.signaled) << "killed by signal " << r.signal;

  const bool accepted = c.target == Target::kFifoWithReader || c.target == Target::kCharDevice ||
                        c.target == Target::kSymlink || c.target == Target::kDanglingSymlink;
  if (accepted) {
    EXPECT_EQ(r.exit_code, 0);
  } else {
    EXPECT_EQ(r.exit_code, 2);
    const std::vector<std::string> errors = r.error_lines();
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_NE(errors[0].find(c.writer.flag), std::string::npos) << "should name " << c.writer.flag;
  }
  // The target survives as it was.
  if (c.target != Target::kEmpty) { EXPECT_EQ(lstat_type(out), before); }
  if (c.target == Target::kFolder) { EXPECT_TRUE(fs::is_directory(out / "keep")); }
  if (c.target == Target::kFifoWithReader) { EXPECT_GT(got.size(), 100u) << "the reader got no output"; }
  if (!written.empty()) {
    EXPECT_TRUE(fs::is_regular_file(written));
    EXPECT_GT(fs::file_size(written), 100u) << "the link's target was not written";
  }
  for (const auto& e : fs::recursive_directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "left " << e.path();
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Cli, OutputPathCli, ::testing::ValuesIn(output_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
