#include "common/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/errors.h"

namespace fs = std::filesystem;

TEST(AtomicFile, WritesAndReplacesWithoutLeavingTemporaries) {
  fs::path dir = fs::temp_directory_path() / "strata_atomic_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
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
  fs::path dir = fs::temp_directory_path() / "strata_atomic_ro";
  fs::remove_all(dir);
  fs::create_directories(dir);
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
