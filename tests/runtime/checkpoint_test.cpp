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
  s.run_id = "run-abc";
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
    EXPECT_EQ(got[static_cast<std::size_t>(r)].run_id, "run-abc");
  }
}

TEST_F(CheckpointTest, LatestIgnoresAStepWithoutManifest) {
  write(3);
  write(6);
  fs::remove(fs::path(checkpoint_step_dir(dir.string(), 6)) / "manifest.json");  // interrupted
  EXPECT_EQ(latest_checkpoint(dir.string()), std::optional<std::int64_t>(3));
  EXPECT_EQ(latest_checkpoint((dir / "nothing").string()), std::nullopt);
}

TEST_F(CheckpointTest, LatestRefusesAStepBeyond64BitsByName) {
  write(3);
  const fs::path huge = dir / "step_99999999999999999999";  // > 2^63 - 1
  fs::create_directories(huge);
  std::ofstream(huge / "manifest.json") << "{}";
  try {
    latest_checkpoint(dir.string());
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("step_99999999999999999999"), std::string::npos) << e.what();
  }
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

// ---- manifests, folder ownership -----------------------------------------------------

namespace strata::runtime {
namespace {

const char* kManifest = R"({"format": "strata-checkpoint", "version": 1, "step": 3,
  "identity": {"model": "tiny", "dp": "2"}, "run_id": "r1",
  "shards": [{"rank": 0, "file": "rank_00000.bin", "bytes": 100, "fnv1a64": "00"},
             {"rank": 1, "file": "rank_00001.bin", "bytes": 100, "fnv1a64": "00"}]})";

struct ManifestCase {
  const char* name;
  std::string from, to;   // edit of kManifest ("" = none)
  const char* mentions;   // "" = accepted
};

void PrintTo(const ManifestCase& c, std::ostream* os) { *os << c.name; }

class ManifestTest : public ::testing::TestWithParam<ManifestCase> {};

TEST_P(ManifestTest, AcceptedOrRefusedByName) {
  const ManifestCase& c = GetParam();
  std::string text = kManifest;
  if (!c.from.empty()) {
    const auto at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << c.from;
    text.replace(at, c.from.size(), c.to);
  }
  std::string error;
  try {
    const auto m = parse_checkpoint_manifest(text, "d/step_00000003/manifest.json", 3, kId, 2);
    EXPECT_EQ(m.shards.size(), 2u);
  } catch (const InputError& e) {
    error = e.what();
  }
  if (std::string(c.mentions).empty()) EXPECT_EQ(error, "");
  else EXPECT_NE(error.find(c.mentions), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(
    Checkpoint, ManifestTest,
    ::testing::ValuesIn(std::vector<ManifestCase>{
        {"valid", "", "", ""},
        {"no_run_id_older_manifest", R"("run_id": "r1",)", "", ""},
        {"not_json", "{", "[", "not valid JSON"},
        {"not_an_object", kManifest, "[1]", "expected a JSON object"},
        {"other_format", "strata-checkpoint", "other", "format must be"},
        {"version_wraps_int", R"("version": 1)", R"("version": 4294967297)", "out of range"},
        {"step_differs", R"("step": 3)", R"("step": 4)", "does not match its folder"},
        {"step_not_integer", R"("step": 3)", R"("step": 3.5)", "expected an integer"},
        {"identity_differs", R"("dp": "2")", R"("dp": "4")", "dp is '4' in the checkpoint but '2' now"},
        {"identity_missing_key", R"(, "dp": "2")", "", "has no 'dp'"},
        {"duplicate_key", R"("step": 3,)", R"("step": 3, "step": 3,)", "duplicate key"},
        {"shard_count", R"(,
             {"rank": 1, "file": "rank_00001.bin", "bytes": 100, "fnv1a64": "00"})", "", "has 1 shards but the run has 2"},
        {"shard_file_escapes", R"("file": "rank_00001.bin")", R"("file": "../../etc/passwd")", "inside the step folder"},
        {"shard_file_dotdot", R"("file": "rank_00001.bin")", R"("file": "..")", "inside the step folder"},
        {"negative_bytes", R"("bytes": 100, "fnv1a64": "00"}])", R"("bytes": -1, "fnv1a64": "00"}])", "out of range"},
        {"shards_not_list", R"("shards": [)", R"("shards": 5, "x": [)", "shards must be a list"},
    }),
    [](const auto& info) { return std::string(info.param.name); });

TEST(CheckpointFolder, SecondClaimIsRefusedWhileTheFirstHoldsTheLock) {
  const fs::path dir = fs::temp_directory_path() / ("strata_ckpt_lock_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    auto first = claim_checkpoint_dir(dir.string(), false);
    ASSERT_TRUE(first);
    EXPECT_TRUE(fs::exists(dir / kLockFile));
    // flock locks belong to the open file: a second open in this process conflicts too.
    std::string error;
    try {
      claim_checkpoint_dir(dir.string(), true);
    } catch (const InputError& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("in use by another `strata train` job (pid"), std::string::npos) << error;
  }
  // Released with the first: a later job may claim it.
  EXPECT_NO_THROW(claim_checkpoint_dir(dir.string(), false));
  fs::remove_all(dir);
}

TEST_F(CheckpointTest, FreshRunRefusesAFolderWithAnotherRunsCheckpoints) {
  write(3);
  std::string error;
  try {
    claim_checkpoint_dir(dir.string(), false);
  } catch (const InputError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("holds the checkpoints of another run (latest step 3, run run-abc)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("--resume"), std::string::npos) << error;
  EXPECT_NO_THROW(claim_checkpoint_dir(dir.string(), true));  // resuming it is fine
}

TEST(CheckpointFolder, RunIdsDiffer) { EXPECT_NE(new_run_id(), new_run_id()); }

}  // namespace
}  // namespace strata::runtime
