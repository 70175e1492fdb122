#include "export/megatron_layer_pattern.h"

#include <fmt/format.h>

#include "common/errors.h"
#include "export/safe_text.h"

namespace strata::exports {

namespace {

// A Python value of the pattern language: an integer or a list of integers.
struct Value {
  bool is_list = false;
  std::int64_t n = 0;
  std::vector<int> items;
};

// Recursive descent over: expr = term ('+' term)*; term = factor ('*' factor)*;
// factor = '(' expr ')' | '[' [int (',' int)*] ']' | int.
class Parser {
 public:
  Parser(const std::string& text, std::size_t max_len, const std::string& flag,
         const std::string& source)
      : text_(text), max_len_(max_len), flag_(flag), source_(source) {}

  Value parse() {
    Value v = expr(0);
    if (pos_ != text_.size()) fail(fmt::format("unexpected '{}' at offset {}", text_[pos_], pos_));
    return v;
  }

 private:
  static constexpr std::int64_t kMaxInt = 1'000'000'000;
  static constexpr int kMaxDepth = 64;

  [[noreturn]] void fail(const std::string& why) const {
    input_error("{}: {} '{}': {}", source_, flag_, one_line(text_), why);
  }
  bool eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::int64_t integer() {
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9')
      fail(pos_ < text_.size() ? fmt::format("expected a number at offset {}", pos_)
                               : std::string("ends early"));
    std::int64_t n = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      n = n * 10 + (text_[pos_++] - '0');
      if (n > kMaxInt) fail(fmt::format("a number exceeds {}", kMaxInt));
    }
    return n;
  }
  Value expr(int depth) {
    Value v = term(depth);
    while (eat('+')) {
      Value r = term(depth);
      if (v.is_list != r.is_list) fail("+ joins a list and a number");
      if (v.is_list) {
        if (v.items.size() + r.items.size() > max_len_)
          fail(fmt::format("longer than {} entries", max_len_));
        v.items.insert(v.items.end(), r.items.begin(), r.items.end());
      } else {
        v.n += r.n;
        if (v.n > kMaxInt) fail(fmt::format("a number exceeds {}", kMaxInt));
      }
    }
    return v;
  }
  Value term(int depth) {
    Value v = factor(depth);
    while (eat('*')) {
      Value r = factor(depth);
      if (v.is_list && r.is_list) fail("* multiplies two lists");
      if (!v.is_list && !r.is_list) {
        if (r.n != 0 && v.n > kMaxInt / r.n) fail(fmt::format("a number exceeds {}", kMaxInt));
        v.n *= r.n;
        continue;
      }
      Value& list = v.is_list ? v : r;
      const std::int64_t times = v.is_list ? r.n : v.n;
      if (!list.items.empty() &&
          static_cast<std::uint64_t>(times) > max_len_ / list.items.size())
        fail(fmt::format("longer than {} entries", max_len_));
      std::vector<int> out;
      out.reserve(list.items.size() * static_cast<std::size_t>(times));
      for (std::int64_t i = 0; i < times; ++i) out.insert(out.end(), list.items.begin(), list.items.end());
      Value repeated;
      repeated.is_list = true;
      repeated.items = std::move(out);
      v = std::move(repeated);
    }
    return v;
  }
  Value factor(int depth) {
    if (depth > kMaxDepth) fail(fmt::format("nested deeper than {}", kMaxDepth));
    if (eat('(')) {
      Value v = expr(depth + 1);
      if (!eat(')')) fail("a '(' is not closed");
      return v;
    }
    if (eat('[')) {
      Value v;
      v.is_list = true;
      if (eat(']')) return v;
      do {
        const std::int64_t n = integer();
        if (n > 1) fail(fmt::format("entry {} is not 0 (dense) or 1 (MoE)", n));
        if (v.items.size() >= max_len_) fail(fmt::format("longer than {} entries", max_len_));
        v.items.push_back(static_cast<int>(n));
      } while (eat(','));
      if (!eat(']')) fail("a '[' is not closed");
      return v;
    }
    Value v;
    v.n = integer();
    return v;
  }

  const std::string& text_;
  std::size_t max_len_;
  const std::string& flag_;
  const std::string& source_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<int> eval_layer_pattern(const std::string& pattern, std::size_t max_len,
                                    const std::string& flag, const std::string& source) {
  Parser parser(pattern, max_len, flag, source);
  Value v = parser.parse();
  if (!v.is_list)
    input_error("{}: {} '{}' is a number, not a list of 0/1 entries", source, flag, one_line(pattern));
  return v.items;
}

MoeLayerLayout moe_layout_from_moe_layer_freq(const std::string& value, std::int64_t layers,
                                              const std::string& source) {
  const char* flag = "--moe-layer-freq";
  if (value.find('[') == std::string::npos) {
    if (value != "1")
      input_error("{}: {} '{}' is not modelled: Megatron's integer N makes blocks 1, N + 1, 2N + 1, "
                  "... MoE (counted from 1), while strata models dense blocks first, then every k-th "
                  "block MoE (1, or a list such as ([0]*3+[1]*58) or ([0]*1+[1]*1)*24)",
                  source, flag, one_line(value));
    return {};
  }
  const std::vector<int> pattern =
      eval_layer_pattern(value, static_cast<std::size_t>(layers), flag, source);
  if (static_cast<std::int64_t>(pattern.size()) != layers)
    input_error("{}: {} '{}' has {} entries, --num-layers is {}", source, flag, one_line(value),
                pattern.size(), layers);
  std::vector<std::int64_t> moe;  // 1-based MoE blocks
  for (std::int64_t l = 1; l <= layers; ++l)
    if (pattern[static_cast<std::size_t>(l - 1)] == 1) moe.push_back(l);
  if (moe.empty())
    input_error("{}: {} '{}' makes every block dense; drop --num-experts for a dense model",
                source, flag, one_line(value));
  // The step is the gap between the first two MoE blocks (one MoE block: a divisor of its
  // index); the dense prefix ends one step before the first MoE block.
  std::vector<std::int64_t> steps;
  if (moe.size() >= 2) steps.push_back(moe[1] - moe[0]);
  else
    for (std::int64_t k = moe[0]; k >= 1; --k)
      if (moe[0] % k == 0) steps.push_back(k);
  std::int64_t first_bad = 0;
  for (std::int64_t k : steps) {
    if (moe[0] % k != 0) continue;
    const MoeLayerLayout layout{moe[0] - k, k};
    std::int64_t bad = 0;
    for (std::int64_t l = 1; l <= layers && bad == 0; ++l)
      if ((pattern[static_cast<std::size_t>(l - 1)] == 1) != (l > layout.first_dense_layers && l % k == 0))
        bad = l;
    if (bad == 0) return layout;
    if (first_bad == 0) first_bad = bad;
  }
  if (first_bad == 0) first_bad = moe[0];
  input_error("{}: {} '{}': block {} ({}) breaks the layouts strata models: dense blocks first, then "
              "every k-th block (counted from 1) MoE",
              source, flag, one_line(value), first_bad,
              pattern[static_cast<std::size_t>(first_bad - 1)] == 1 ? "MoE" : "dense");
}

std::string moe_layer_freq_pattern(const MoeLayerLayout& layout, std::int64_t layers) {
  const std::int64_t d = layout.first_dense_layers, k = layout.layer_step;
  if (k == 1) return fmt::format("([0]*{}+[1]*{})", d, layers - d);
  // Whole periods inside the dense prefix stay dense; the periods after it end with their MoE
  // block; blocks past the last whole period are dense.
  const std::int64_t dense_periods = d / k, periods = layers / k - dense_periods, tail = layers % k;
  std::string out;
  if (dense_periods > 0) out += fmt::format("[0]*{}+", dense_periods * k);
  out += fmt::format("([0]*{}+[1]*1)*{}", k - 1, periods);
  if (tail > 0) out += fmt::format("+[0]*{}", tail);
  return out;
}

}  // namespace strata::exports
