// Checkpoints on two in-process ranks: a written checkpoint reads back exactly; an
// incomplete step folder (no manifest) is ignored; a corrupt shard or a different
// identity is an InputError on *every* rank.
#include "runtime/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "common/errors.h"
#include "thread_communicator.h"

namespace strata::runtime {
namespace {

namespace fs = std::filesystem;

CheckpointShard shard_for(int rank, std::int64_t step) {
  CheckpointShard s;
  s.step = step;
  for (int i = 0; i < 10 + rank; ++i) s.params.push_back(0.5f * static_cast<float>(i) + static_cast<float>(rank));
  s.exp_avg = {1.0f * static_cast<float>(rank), 2.0f};
  s.exp_avg_sq = {3.0f, 4.0f + static_cast<float>(rank)};
  return s;
}

const CheckpointIdentity kId = {{"model", "tiny"}, {"dp", "2"}};

// Runs fn(comm, rank) on two thread-ranks; returns each rank's InputError message ("" if none).
std::vector<std::string> on_two_ranks(const std::function<void(kernels::Communicator&, int)>& fn) {
  testing::ThreadGroup g(2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> th;
  for (int r = 0; r < 2; ++r)
    th.emplace_back([&, r] {
      testing::ThreadCommunicator comm(g, r);
      try {
        fn(comm, r);
      } catch (const InputError& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : th) t.join();
  return errors;
}

struct CheckpointTest : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("strata_ckpt_test_" + std::to_string(::getpid()));
  void SetUp() override { fs::remove_all(dir); }
  void TearDown() override { fs::remove_all(dir); }
  void write(std::int64_t step) {
    auto errors = on_two_ranks([&](kernels::Communicator& c, int r) {
      write_checkpoint(c, dir.string(), kId, shard_for(r, step));
    });
    ASSERT_EQ(errors, std::vector<std::string>(2));
  }
};

TEST_F(CheckpointTest, ReadsBackWhatWasWritten) {
  write(3);
  ASSERT_EQ(latest_checkpoint(dir.string()), std::optional<std::int64_t>(3));
  std::vector<CheckpointShard> got(2);
  auto errors = on_two_ranks([&](kernels::Communicator& c, int r) {
    got[static_cast<std::size_t>(r)] = read_checkpoint(c, dir.string(), 3, kId, 10u + static_cast<unsigned>(r), 2);
  });
  ASSERT_EQ(errors, std::vector<std::string>(2));
  for (int r = 0; r < 2; ++r) {
    const auto want = shard_for(r, 3);
    EXPECT_EQ(got[static_cast<std::size_t>(r)].params, want.params);
    EXPECT_EQ(got[static_cast<std::size_t>(r)].exp_avg, want.exp_avg);
    EXPECT_EQ(got[static_cast<std::size_t>(r)].exp_avg_sq, want.exp_avg_sq);
  }
}

TEST_F(CheckpointTest, LatestIgnoresAStepWithoutManifest) {
  write(3);
  write(6);
  fs::remove(fs::path(checkpoint_step_dir(dir.string(), 6)) / "manifest.json");  // interrupted
  EXPECT_EQ(latest_checkpoint(dir.string()), std::optional<std::int64_t>(3));
  EXPECT_EQ(latest_checkpoint((dir / "nothing").string()), std::nullopt);
}

TEST_F(CheckpointTest, CorruptShardFailsOnEveryRank) {
  write(3);
  const fs::path shard = fs::path(checkpoint_step_dir(dir.string(), 3)) / "rank_00001.bin";
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(50);
    f.put('\x7f');
  }
  auto errors = on_two_ranks([&](kernels::Communicator& c, int r) {
    read_checkpoint(c, dir.string(), 3, kId, 10u + static_cast<unsigned>(r), 2);
  });
  EXPECT_NE(errors[1].find("corrupt"), std::string::npos) << errors[1];
  EXPECT_NE(errors[0].find("corrupt"), std::string::npos) << errors[0];
}

TEST_F(CheckpointTest, DifferentIdentityIsRejected) {
  write(3);
  const CheckpointIdentity other = {{"model", "tiny"}, {"dp", "1"}};
  auto errors = on_two_ranks([&](kernels::Communicator& c, int r) {
    read_checkpoint(c, dir.string(), 3, other, 10u + static_cast<unsigned>(r), 2);
  });
  for (const auto& e : errors) EXPECT_NE(e.find("dp is '2' in the checkpoint but '1' now"), std::string::npos) << e;
}

TEST_F(CheckpointTest, WrongShardSizeIsRejected) {
  write(3);
  auto errors = on_two_ranks([&](kernels::Communicator& c, int r) {
    read_checkpoint(c, dir.string(), 3, kId, 99, 2);
  });
  for (const auto& e : errors) EXPECT_NE(e.find("99"), std::string::npos) << e;
}

}  // namespace
}  // namespace strata::runtime
