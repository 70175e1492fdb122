// DataLoader: training samples of seq_len + 1 tokens (inputs = the first seq_len,
// targets = the last seq_len), addressed by a global sample index. Sample i of step t
// is index t * global_batch + i for every layout; data-parallel rank d takes the
// indices [d * global_batch / dp, (d+1) * global_batch / dp) of each step and splits
// them into its micro-batches, so every layout sees the same samples in the same order.
//
// Sources:
//   synthetic   seeded sequences with a learnable pattern (x_{j+1} = x_j + stride mod V,
//               with 1 token in 8 replaced by noise), for throughput and smoke tests.
//   token file  binary, little-endian:
//                 offset 0   char[8]  magic "STRATATK"
//                 offset 8   uint32   format version (1)
//                 offset 12  uint32   bytes per token: 2 (uint16) or 4 (uint32)
//                 offset 16  uint64   token count n
//                 offset 24  n tokens
//               Samples are the windows [w*S, w*S + S + 1) for w < (n-1)/S, visited in a
//               seeded random order that is reshuffled every epoch.
//   text file   bytes of the file as tokens 0..255 (needs vocab >= 256), windows as above.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::runtime {

enum class DataKind { Synthetic, TokenFile, TextFile };

class DataLoader {
 public:
  // InputError naming the path and the problem (missing, bad magic/version/width,
  // truncated, a token >= vocab, too short for one sample).
  static DataLoader synthetic(std::int64_t vocab, std::int64_t seq_len, std::uint64_t seed);
  static DataLoader token_file(const std::string& path, std::int64_t vocab, std::int64_t seq_len,
                               std::uint64_t seed);
  static DataLoader text_file(const std::string& path, std::int64_t vocab, std::int64_t seq_len,
                              std::uint64_t seed);

  // inputs (seq_len) and targets (seq_len) of sample `index` (>= 0).
  void sample(std::int64_t index, std::int32_t* inputs, std::int32_t* targets) const;

  DataKind kind() const { return kind_; }
  std::int64_t num_windows() const { return windows_; }  // 0 for synthetic

  // Writes `tokens` as a token file (atomically); bytes_per_token 2 or 4.
  static void write_token_file(const std::string& path, const std::vector<std::uint32_t>& tokens,
                               int bytes_per_token);

 private:
  DataLoader() = default;
  std::int64_t window_of(std::int64_t index) const;

  DataKind kind_ = DataKind::Synthetic;
  std::int64_t vocab_ = 0, seq_ = 0, windows_ = 0;
  std::uint64_t seed_ = 0;
  std::vector<std::int32_t> tokens_;
  mutable std::int64_t perm_epoch_ = -1;
  mutable std::vector<std::int64_t> perm_;
};

}  // namespace strata::runtime
