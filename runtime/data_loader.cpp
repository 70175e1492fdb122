#include "runtime/data_loader.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace strata::runtime {

namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'A', 'T', 'A', 'T', 'K'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderBytes = 24;

std::uint64_t mix(std::uint64_t x) {  // SplitMix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename U>
U read_le(const std::string& bytes, std::size_t offset) {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i)
    v |= static_cast<U>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return v;
}

void check_sizes(std::int64_t vocab, std::int64_t seq_len) {
  if (vocab < 1) input_error("model.vocab ({}) must be >= 1", vocab);
  if (seq_len < 1) input_error("model.seq_len ({}) must be >= 1", seq_len);
  if (vocab > static_cast<std::int64_t>(INT32_MAX))
    input_error("model.vocab ({}) exceeds the runtime's 32-bit token ids", vocab);
}

}  // namespace

DataLoader DataLoader::synthetic(std::int64_t vocab, std::int64_t seq_len, std::uint64_t seed) {
  check_sizes(vocab, seq_len);
  DataLoader d;
  d.kind_ = DataKind::Synthetic;
  d.vocab_ = vocab;
  d.seq_ = seq_len;
  d.seed_ = seed;
  return d;
}

DataLoader DataLoader::token_file(const std::string& path, std::int64_t vocab, std::int64_t seq_len,
                                  std::uint64_t seed) {
  check_sizes(vocab, seq_len);
  const std::string bytes = read_file(path, SIZE_MAX);  // training data: no cap
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 8) != 0)
    input_error("--data {}: not a strata token file (expected the 8-byte magic \"STRATATK\" and "
                "a 24-byte header; see runtime/data_loader.h)", path);
  const auto version = read_le<std::uint32_t>(bytes, 8);
  if (version != kVersion)
    input_error("--data {}: token file version {} is not supported (expected {})", path, version,
                kVersion);
  const auto width = read_le<std::uint32_t>(bytes, 12);
  if (width != 2 && width != 4)
    input_error("--data {}: bytes per token ({}) must be 2 or 4", path, width);
  const auto count = read_le<std::uint64_t>(bytes, 16);
  if (count > (bytes.size() - kHeaderBytes) / width || bytes.size() - kHeaderBytes != count * width)
    input_error("--data {}: header says {} tokens of {} bytes but the file holds {} bytes of "
                "tokens (truncated or corrupt)", path, count, width, bytes.size() - kHeaderBytes);
  DataLoader d;
  d.kind_ = DataKind::TokenFile;
  d.vocab_ = vocab;
  d.seq_ = seq_len;
  d.seed_ = seed;
  d.tokens_.resize(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint32_t t = width == 2 ? read_le<std::uint16_t>(bytes, kHeaderBytes + 2 * i)
                                       : read_le<std::uint32_t>(bytes, kHeaderBytes + 4 * i);
    if (static_cast<std::int64_t>(t) >= vocab)
      input_error("--data {}: token {} at position {} is >= model.vocab ({})", path, t, i, vocab);
    d.tokens_[i] = static_cast<std::int32_t>(t);
  }
  d.windows_ = count == 0 ? 0 : static_cast<std::int64_t>((count - 1) / static_cast<std::uint64_t>(seq_len));
  if (d.windows_ < 1)
    input_error("--data {}: {} tokens are too few for one sample of model.seq_len + 1 = {} tokens",
                path, count, seq_len + 1);
  return d;
}

DataLoader DataLoader::text_file(const std::string& path, std::int64_t vocab, std::int64_t seq_len,
                                 std::uint64_t seed) {
  check_sizes(vocab, seq_len);
  if (vocab < 256)
    input_error("--text tokenizes bytes (256 symbols) but model.vocab is {} (needs >= 256)", vocab);
  const std::string bytes = read_file(path, SIZE_MAX);  // training data: no cap
  DataLoader d;
  d.kind_ = DataKind::TextFile;
  d.vocab_ = vocab;
  d.seq_ = seq_len;
  d.seed_ = seed;
  d.tokens_.resize(bytes.size());
  for (std::size_t i = 0; i < bytes.size(); ++i) d.tokens_[i] = static_cast<unsigned char>(bytes[i]);
  d.windows_ = bytes.empty() ? 0 : static_cast<std::int64_t>((bytes.size() - 1) / static_cast<std::size_t>(seq_len));
  if (d.windows_ < 1)
    input_error("--text {}: {} bytes are too few for one sample of model.seq_len + 1 = {} tokens",
                path, bytes.size(), seq_len + 1);
  return d;
}

std::int64_t DataLoader::window_of(std::int64_t index) const {
  const std::int64_t epoch = index / windows_, j = index % windows_;
  if (epoch != perm_epoch_) {  // Fisher-Yates with a counter-based generator
    perm_.resize(static_cast<std::size_t>(windows_));
    std::iota(perm_.begin(), perm_.end(), 0);
    const std::uint64_t key = mix(seed_ ^ mix(static_cast<std::uint64_t>(epoch) + 1));
    for (std::int64_t i = windows_ - 1; i > 0; --i) {
      const auto r = static_cast<std::int64_t>(mix(key + static_cast<std::uint64_t>(i)) %
                                               static_cast<std::uint64_t>(i + 1));
      std::swap(perm_[static_cast<std::size_t>(i)], perm_[static_cast<std::size_t>(r)]);
    }
    perm_epoch_ = epoch;
  }
  return perm_[static_cast<std::size_t>(j)];
}

void DataLoader::sample(std::int64_t index, std::int32_t* inputs, std::int32_t* targets) const {
  STRATA_CHECK(index >= 0, "negative sample index {}", index);
  const auto S = static_cast<std::size_t>(seq_);
  if (kind_ == DataKind::Synthetic) {
    const std::uint64_t key = mix(seed_ ^ mix(static_cast<std::uint64_t>(index)));
    const auto V = static_cast<std::uint64_t>(vocab_);
    std::uint64_t x = mix(key) % V;
    const std::uint64_t stride = 1 + mix(key + 1) % 7;
    std::vector<std::int32_t> seq(S + 1);
    for (std::size_t j = 0; j <= S; ++j) {
      const std::uint64_t r = mix(key + 2 + j);
      seq[j] = static_cast<std::int32_t>(r % 8 == 0 ? (r >> 3) % V : x);
      x = (x + stride) % V;
    }
    std::copy_n(seq.begin(), S, inputs);
    std::copy_n(seq.begin() + 1, S, targets);
    return;
  }
  const auto start = static_cast<std::size_t>(window_of(index)) * S;
  std::copy_n(tokens_.begin() + static_cast<std::ptrdiff_t>(start), S, inputs);
  std::copy_n(tokens_.begin() + static_cast<std::ptrdiff_t>(start) + 1, S, targets);
}

void DataLoader::write_token_file(const std::string& path, const std::vector<std::uint32_t>& tokens,
                                  int bytes_per_token) {
  if (bytes_per_token != 2 && bytes_per_token != 4)
    input_error("bytes per token ({}) must be 2 or 4", bytes_per_token);
  std::string out(kHeaderBytes + tokens.size() * static_cast<std::size_t>(bytes_per_token), '\0');
  auto put = [&](std::size_t off, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out[off + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  std::memcpy(out.data(), kMagic, 8);
  put(8, kVersion, 4);
  put(12, static_cast<std::uint64_t>(bytes_per_token), 4);
  put(16, tokens.size(), 8);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (bytes_per_token == 2 && tokens[i] > 0xffff)
      input_error("token {} at position {} does not fit in 2 bytes", tokens[i], i);
    put(kHeaderBytes + i * static_cast<std::size_t>(bytes_per_token), tokens[i], bytes_per_token);
  }
  write_file_atomic(path, out);
}

}  // namespace strata::runtime
