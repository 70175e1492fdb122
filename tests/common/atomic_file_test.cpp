#include "common/atomic_file.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/errors.h"

namespace fs = std::filesystem;

namespace {

// A folder of that name in the temp directory, emptied of what an earlier run left there.
fs::path empty_temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST(AtomicFile, WritesAndReplacesWithoutLeavingTemporaries) {
  fs::path dir = empty_temp_dir("strata_atomic_test");
  std::string p = (dir / "out.yaml").string();
  strata::write_file_atomic(p, "first\n");
  EXPECT_EQ(strata::read_file(p), "first\n");
  strata::write_file_atomic(p, "second\n");
  EXPECT_EQ(strata::read_file(p), "second\n");
  int entries = 0;
  for (auto& e : fs::directory_iterator(dir)) { (void)e; ++entries; }
  EXPECT_EQ(entries, 1);
  fs::remove_all(dir);
}

TEST(AtomicFile, MissingFolderIsAnInputError) {
  EXPECT_THROW(strata::write_file_atomic("/nonexistent-folder/x.yaml", "x"), strata::InputError);
  EXPECT_THROW(strata::read_file("/nonexistent-folder/x.yaml"), strata::InputError);
}

TEST(AtomicFile, FailedWriteKeepsThePreviousFile) {
  fs::path dir = empty_temp_dir("strata_atomic_ro");
  std::string p = (dir / "plan.yaml").string();
  strata::write_file_atomic(p, "old\n");
  // A directory with the target's name cannot be replaced by rename: the write fails.
  std::string blocked = (dir / "sub").string();
  fs::create_directories(blocked + "/x");
  EXPECT_THROW(strata::write_file_atomic(blocked, "new\n"), strata::InputError);
  EXPECT_EQ(strata::read_file(p), "old\n");
  int temporaries = 0;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp") != std::string::npos) ++temporaries;
  EXPECT_EQ(temporaries, 0);
  fs::remove_all(dir);
}

// ---- Output paths that are not plain files -------------------------------------------
// Every case runs on objects made in a private temp folder (never under the real /dev):
// a FIFO from mkfifo, a character device node from mknod (a copy of the null device,
// root only), symbolic links, a socket. Each case checks the write's outcome and that
// the object at the path is still what it was.
namespace {

enum class Kind { kFifoWithReader, kFifoNoReader, kCharDevice, kSymlinkToFile, kDanglingSymlink,
                  kRelativeSymlinkChain, kSymlinkToFolder, kSymlinkLoop, kFolder, kSocket,
                  kEmptyPath, kTrailingSlash, kReadOnlyFile };

struct OutputCase {
  std::string name;
  Kind kind;
  bool accepted;                    // the write succeeds
  std::vector<std::string> mentions;  // the error names these
};

void PrintTo(const OutputCase& c, std::ostream* os) { *os << c.name; }

fs::file_type lstat_type(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type();
}

class OutputPathTest : public ::testing::TestWithParam<OutputCase> {
 protected:
  void SetUp() override {
    dir_ = empty_temp_dir("strata_outpath_" + GetParam().name);
  }
  void TearDown() override {
    if (reader_ >= 0) ::close(reader_);
    if (sock_ >= 0) ::close(sock_);
    fs::remove_all(dir_);
  }
  fs::path dir_;
  int reader_ = -1, sock_ = -1;
};

TEST_P(OutputPathTest, WritesThroughOrRefusesAndKeepsTheTarget) {
  const OutputCase& c = GetParam();
  fs::path target = dir_ / "out.yaml";
  std::string path = target.string();
  fs::path written;  // the file whose contents must be the new ones
  switch (c.kind) {
    case Kind::kFifoWithReader:
    case Kind::kFifoNoReader:
      ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << std::strerror(errno);
      // The reader is opened non-blocking first, so neither side can wait forever.
      if (c.kind == Kind::kFifoWithReader) {
        reader_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
        ASSERT_GE(reader_, 0) << std::strerror(errno);
      }
      break;
    case Kind::kCharDevice:
      if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
        GTEST_SKIP() << "mknod not permitted here: " << std::strerror(errno);
      break;
    case Kind::kSymlinkToFile:
      std::ofstream(dir_ / "real.yaml") << "old\n";
      fs::create_symlink(dir_ / "real.yaml", target);
      written = dir_ / "real.yaml";
      break;
    case Kind::kDanglingSymlink:
      fs::create_symlink(dir_ / "later.yaml", target);
      written = dir_ / "later.yaml";
      break;
    case Kind::kRelativeSymlinkChain:
      fs::create_directories(dir_ / "sub");
      std::ofstream(dir_ / "sub" / "real.yaml") << "old\n";
      fs::create_symlink("real.yaml", dir_ / "sub" / "hop.yaml");
      fs::create_symlink("sub/hop.yaml", target);
      written = dir_ / "sub" / "real.yaml";
      break;
    case Kind::kSymlinkToFolder:
      fs::create_directories(dir_ / "folder");
      fs::create_symlink(dir_ / "folder", target);
      break;
    case Kind::kSymlinkLoop:
      fs::create_symlink(dir_ / "b", target);
      fs::create_symlink(target, dir_ / "b");
      break;
    case Kind::kFolder:
      fs::create_directories(target);
      break;
    case Kind::kSocket: {
      sock_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
      ASSERT_GE(sock_, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      ASSERT_LT(path.size(), sizeof addr.sun_path);
      std::strcpy(addr.sun_path, path.c_str());
      ASSERT_EQ(::bind(sock_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
      break;
    }
    case Kind::kEmptyPath:
      path.clear();
      break;
    case Kind::kTrailingSlash:
      path = (dir_ / "missing").string() + "/";
      break;
    case Kind::kReadOnlyFile:
      std::ofstream(target) << "old\n";
      fs::permissions(target, fs::perms::owner_read | fs::perms::group_read);
      written = target;
      break;
  }
  const fs::file_type before = lstat_type(target);

  const std::string contents = "plan: new\n";
  bool threw = false;
  std::string error;
  try {
    strata::check_output_target(path);
    strata::write_file_atomic(path, contents);
  } catch (const strata::InputError& e) {
    threw = true;
    error = e.what();
  }
  EXPECT_EQ(!threw, c.accepted) << error;
  for (const auto& m : c.mentions) EXPECT_NE(error.find(m), std::string::npos) << error << " should name " << m;

  // The object at the path is what it was: still a FIFO, device, link or folder.
  if (c.kind != Kind::kEmptyPath && c.kind != Kind::kTrailingSlash) {
    EXPECT_EQ(lstat_type(target), before);
  }
  if (c.accepted && !written.empty()) {
    EXPECT_EQ(strata::read_file(written.string()), contents);
  }
  if (c.kind == Kind::kReadOnlyFile) {
    EXPECT_EQ(fs::status(target).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::group_read)
        << "a replaced file keeps its permission bits";
  }
  if (c.kind == Kind::kFifoWithReader) {
    char buf[256];
    ssize_t n = ::read(reader_, buf, sizeof buf);
    ASSERT_GT(n, 0);
    EXPECT_EQ(std::string(buf, static_cast<size_t>(n)), contents);
  }
  // Nothing else appeared next to the target (no temporaries, no regular file).
  for (const auto& e : fs::recursive_directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

INSTANTIATE_TEST_SUITE_P(
    Common, OutputPathTest,
    ::testing::ValuesIn(std::vector<OutputCase>{
        {"fifo_with_reader", Kind::kFifoWithReader, true, {}},
        {"fifo_without_reader", Kind::kFifoNoReader, false, {"FIFO", "no reader"}},
        {"char_device_copy", Kind::kCharDevice, true, {}},
        {"symlink_to_file", Kind::kSymlinkToFile, true, {}},
        {"dangling_symlink", Kind::kDanglingSymlink, true, {}},
        {"relative_symlink_chain", Kind::kRelativeSymlinkChain, true, {}},
        {"symlink_to_folder", Kind::kSymlinkToFolder, false, {"folder"}},
        {"symlink_loop", Kind::kSymlinkLoop, false, {"symbolic links"}},
        {"folder", Kind::kFolder, false, {"folder", "out.yaml"}},
        {"socket", Kind::kSocket, false, {"socket"}},
        {"empty_path", Kind::kEmptyPath, false, {"empty"}},
        {"trailing_slash", Kind::kTrailingSlash, false, {"missing"}},
        {"read_only_file_replaced_keeps_mode", Kind::kReadOnlyFile, true, {}},
    }),
    [](const auto& info) { return info.param.name; });

TEST(AtomicFile, ReadRefusesFilesAboveTheCap) {
  fs::path dir = empty_temp_dir("strata_atomic_cap");
  std::string p = (dir / "big.yaml").string();
  std::ofstream(p) << std::string(5000, 'x');
  EXPECT_EQ(strata::read_file(p, 5000).size(), 5000u);
  try {
    strata::read_file(p, 4999);
    ADD_FAILURE() << "a file above the cap was read";
  } catch (const strata::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("4999 bytes"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
