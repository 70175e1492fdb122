// DataLoader: the token file format round-trips, bad files are InputErrors naming the
// problem, samples depend only on their index (the layout-independence the parity tests
// rely on), targets are inputs shifted by one, and epochs visit every window once.
#include "runtime/data_loader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/errors.h"

namespace strata::runtime {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  fs::path p = fs::temp_directory_path() / ("strata_data_test_" + std::to_string(::getpid()));
  fs::create_directories(p);
  return p;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(DataLoader, TokenFileRoundTripsInBothWidths) {
  const fs::path dir = temp_dir();
  std::vector<std::uint32_t> tokens;
  for (std::uint32_t i = 0; i < 101; ++i) tokens.push_back((i * 37) % 1000);
  for (int width : {2, 4}) {
    const std::string path = (dir / ("t" + std::to_string(width) + ".bin")).string();
    DataLoader::write_token_file(path, tokens, width);
    EXPECT_EQ(fs::file_size(path), 24u + tokens.size() * static_cast<std::size_t>(width));
    const DataLoader d = DataLoader::token_file(path, 1000, 10, 7);
    EXPECT_EQ(d.num_windows(), 10);  // (101 - 1) / 10
    std::set<std::int64_t> starts;
    for (std::int64_t i = 0; i < d.num_windows(); ++i) {
      std::vector<std::int32_t> in(10), tg(10);
      d.sample(i, in.data(), tg.data());
      // the window starting at token k: inputs tokens[k..k+9], targets tokens[k+1..k+10]
      std::int64_t k = -1;
      for (std::int64_t w = 0; w < 10; ++w)
        if (static_cast<std::uint32_t>(in[0]) == tokens[static_cast<std::size_t>(w * 10)] &&
            static_cast<std::uint32_t>(in[1]) == tokens[static_cast<std::size_t>(w * 10 + 1)])
          k = w * 10;
      ASSERT_GE(k, 0);
      starts.insert(k);
      for (int j = 0; j < 10; ++j) {
        EXPECT_EQ(static_cast<std::uint32_t>(in[j]), tokens[static_cast<std::size_t>(k + j)]);
        EXPECT_EQ(static_cast<std::uint32_t>(tg[j]), tokens[static_cast<std::size_t>(k + j + 1)]);
      }
    }
    EXPECT_EQ(starts.size(), 10u) << "one epoch visits every window once";
  }
  fs::remove_all(dir);
}

TEST(DataLoader, BadTokenFilesAreInputErrors) {
  const fs::path dir = temp_dir();
  const std::string path = (dir / "t.bin").string();
  DataLoader::write_token_file(path, {1, 2, 3, 4, 500}, 2);
  EXPECT_NE(error_of([&] { DataLoader::token_file(path, 256, 2, 1); }).find("token 500 at position 4"), std::string::npos);
  EXPECT_NE(error_of([&] { DataLoader::token_file(path, 1000, 8, 1); }).find("too few"), std::string::npos);
  {
    std::ofstream(path, std::ios::binary) << "NOTATOKENFILE-AT-ALL-HERE";
  }
  EXPECT_NE(error_of([&] { DataLoader::token_file(path, 1000, 2, 1); }).find("STRATATK"), std::string::npos);
  DataLoader::write_token_file(path, {1, 2, 3, 4, 5, 6}, 4);
  fs::resize_file(path, fs::file_size(path) - 3);
  EXPECT_NE(error_of([&] { DataLoader::token_file(path, 1000, 2, 1); }).find("truncated"), std::string::npos);
  EXPECT_NE(error_of([&] { DataLoader::token_file((dir / "missing.bin").string(), 1000, 2, 1); }).find("missing.bin"),
            std::string::npos);
  EXPECT_NE(error_of([&] { DataLoader::text_file(path, 128, 2, 1); }).find("vocab"), std::string::npos);
  fs::remove_all(dir);
}

TEST(DataLoader, TextFileTokensAreBytes) {
  const fs::path dir = temp_dir();
  const std::string path = (dir / "t.txt").string();
  std::ofstream(path) << "hello world";
  const DataLoader d = DataLoader::text_file(path, 256, 10, 3);
  std::vector<std::int32_t> in(10), tg(10);
  d.sample(0, in.data(), tg.data());
  EXPECT_EQ(in[0], 'h');
  EXPECT_EQ(tg[9], 'd');
  fs::remove_all(dir);
}

TEST(DataLoader, SyntheticSamplesDependOnlyOnIndexAndSeed) {
  const DataLoader a = DataLoader::synthetic(256, 32, 5), b = DataLoader::synthetic(256, 32, 5);
  const DataLoader c = DataLoader::synthetic(256, 32, 6);
  std::vector<std::int32_t> x(32), y(32), x2(32), y2(32);
  // read b in a different order first: a sample never depends on what was read before
  b.sample(9, x2.data(), y2.data());
  a.sample(3, x.data(), y.data());
  b.sample(3, x2.data(), y2.data());
  EXPECT_EQ(x, x2);
  EXPECT_EQ(y, y2);
  for (int j = 0; j + 1 < 32; ++j) EXPECT_EQ(x[static_cast<std::size_t>(j + 1)], y[static_cast<std::size_t>(j)]);
  for (auto t : x) {
    EXPECT_GE(t, 0);
    EXPECT_LT(t, 256);
  }
  c.sample(3, x2.data(), y2.data());
  EXPECT_NE(x, x2);
}

}  // namespace
}  // namespace strata::runtime
