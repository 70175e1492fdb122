#include "common/yaml_reader.h"

#include <optional>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace strata {

namespace {

// yaml-cpp keeps both entries of a key written twice in one mapping and `node[key]`
// answers the first, so a later correction would be ignored silently: refuse it. The walk
// is iterative and bounded, and checks each collection once: an alias is the node it names
// (same start in the text), so a file that repeats or nests an anchor in itself (a cycle)
// costs its own size, not the expanded tree's.
void check_unique_keys(const YAML::Node& root, const std::string& source) {
  constexpr std::size_t kMaxNodes = 4'000'000;
  std::vector<YAML::Node> todo{root};
  std::set<int> walked;  // text positions of the collections already checked
  std::size_t visited = 0;
  while (!todo.empty()) {
    YAML::Node n = todo.back();
    todo.pop_back();
    if (++visited > kMaxNodes)
      input_error("{}: more than {} YAML nodes (with aliases expanded): too large to read", source,
                  kMaxNodes);
    if ((n.IsMap() || n.IsSequence()) && n.Mark().pos >= 0 && !walked.insert(n.Mark().pos).second) continue;
    if (n.IsMap()) {
      std::map<std::string, int> seen;  // key -> line of its first appearance
      for (const auto& kv : n) {
        if (kv.first.IsScalar()) {
          const int line = kv.first.Mark().line + 1;
          auto [it, fresh] = seen.emplace(kv.first.Scalar(), line);
          if (!fresh)
            input_error("{}:{}: duplicate key '{}' (first at line {}); each key may appear once",
                        source, line, kv.first.Scalar(), it->second);
        } else {
          todo.push_back(kv.first);
        }
        todo.push_back(kv.second);
      }
    } else if (n.IsSequence()) {
      for (const auto& e : n) todo.push_back(e);
    }
  }
}

// The line of the first byte that is not part of well-formed UTF-8, or 0 when all are.
// YAML is Unicode text: yaml-cpp reads a stray byte in a plain scalar but not where strata
// writes the string back quoted, so such a file would not survive its own round trip.
std::size_t first_non_utf8_line(const std::string& text) {
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') ++line;
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > text.size()) return line;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 0x2) return line;
    if (n == 2 && c < 0xC2) return line;  // overlong
    i += n;
  }
  return 0;
}

}  // namespace

YAML::Node parse_yaml(const std::string& text, const std::string& source) {
  if (const std::size_t line = first_non_utf8_line(text); line > 0)
    input_error("{}:{}: not UTF-8 text (YAML files are Unicode)", source, line);
  YAML::Node n;
  try {
    n = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    input_error("{}:{}: malformed YAML: {}", source, e.mark.line + 1, e.msg);
  }
  if (!n || n.IsNull()) input_error("{}: empty document, expected a YAML mapping", source);
  check_unique_keys(n, source);
  return n;
}

YAML::Node load_yaml_file(const std::string& path) { return parse_yaml(read_file(path), path); }

YamlReader::YamlReader(YAML::Node node, std::string source, std::string path)
    : node_(std::move(node)), source_(std::move(source)), path_(std::move(path)) {}

std::string YamlReader::where(const std::string& key) const {
  std::string p = path_.empty() ? key : (key.empty() ? path_ : path_ + "." + key);
  int line = -1;
  try {
    if (!key.empty() && node_.IsMap() && node_[key]) line = node_[key].Mark().line;
    else line = node_.Mark().line;
  } catch (...) {
  }
  std::string loc = line >= 0 ? fmt::format("{}:{}", source_, line + 1) : source_;
  return p.empty() ? loc : fmt::format("{}: {}", loc, p);
}

void YamlReader::fail(const std::string& key, const std::string& what) const {
  throw InputError(fmt::format("{}: {}", where(key), what));
}

void YamlReader::expect_map() const {
  if (!node_.IsMap()) fail("", "expected a mapping of key: value");
}
void YamlReader::expect_sequence() const {
  if (!node_.IsSequence()) fail("", "expected a list");
}

bool YamlReader::has(const std::string& key) const {
  return node_.IsMap() && node_[key] && !node_[key].IsNull();
}

YAML::Node YamlReader::value(const std::string& key) const {
  expect_map();
  YAML::Node v = node_[key];
  if (!v || v.IsNull()) fail(key, "missing required key");
  return v;
}

YamlReader YamlReader::child(const std::string& key) const {
  return YamlReader(value(key), source_, path_.empty() ? key : path_ + "." + key);
}

YamlReader YamlReader::element(std::size_t i) const {
  expect_sequence();
  return YamlReader(node_[i], source_, fmt::format("{}[{}]", path_, i));
}

std::size_t YamlReader::size() const {
  expect_sequence();
  return node_.size();
}

void YamlReader::expect_keys(std::initializer_list<const char*> allowed) const {
  expect_map();
  for (const auto& kv : node_) {
    std::string k = kv.first.as<std::string>("");
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      YamlReader(kv.first, source_, path_).fail(k, fmt::format("unknown key (allowed: {})", list));
    }
  }
}

std::string YamlReader::get_string(const std::string& key) const {
  YAML::Node v = value(key);
  if (!v.IsScalar()) fail(key, "expected a string");
  return v.Scalar();
}
std::string YamlReader::get_string(const std::string& key, const std::string& dflt) const {
  return has(key) ? get_string(key) : dflt;
}

std::int64_t YamlReader::get_int(const std::string& key) const {
  YAML::Node v = value(key);
  if (!v.IsScalar()) fail(key, "expected an integer");
  const std::string& s = v.Scalar();
  try {
    size_t pos = 0;
    long long x = std::stoll(s, &pos, 10);
    if (pos == s.size()) return x;
    // Accept integral floats written as 1e3 or 2048.0.
    double d = std::stod(s, &pos);
    if (pos == s.size() && std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18)
      return static_cast<std::int64_t>(d);
  } catch (const std::out_of_range&) {
    fail(key, fmt::format("'{}' is out of range for a 64-bit integer", s));
  } catch (...) {
  }
  fail(key, fmt::format("expected an integer, got '{}'", s));
}
std::int64_t YamlReader::get_int(const std::string& key, std::int64_t dflt) const {
  return has(key) ? get_int(key) : dflt;
}
std::int64_t YamlReader::get_int_in(const std::string& key, std::int64_t lo, std::int64_t hi) const {
  std::int64_t x = get_int(key);
  if (x < lo || x > hi) fail(key, fmt::format("{} is out of range, expected {} .. {}", x, lo, hi));
  return x;
}
std::int64_t YamlReader::get_int_in(const std::string& key, std::int64_t lo, std::int64_t hi,
                                    std::int64_t dflt) const {
  return has(key) ? get_int_in(key, lo, hi) : dflt;
}

namespace {
std::optional<double> finite_number(const std::string& s) {
  try {
    size_t pos = 0;
    double d = std::stod(s, &pos);
    if (pos == s.size() && std::isfinite(d)) return d;
  } catch (...) {
  }
  return std::nullopt;
}
}  // namespace

double YamlReader::get_double(const std::string& key) const {
  YAML::Node v = value(key);
  if (!v.IsScalar()) fail(key, "expected a number");
  if (const auto d = finite_number(v.Scalar())) return *d;
  fail(key, fmt::format("expected a finite number, got '{}'", v.Scalar()));
}
double YamlReader::as_double() const {
  if (!node_.IsScalar()) fail("", "expected a number");
  if (const auto d = finite_number(node_.Scalar())) return *d;
  fail("", fmt::format("expected a finite number, got '{}'", node_.Scalar()));
}
double YamlReader::get_double(const std::string& key, double dflt) const {
  return has(key) ? get_double(key) : dflt;
}
double YamlReader::get_positive(const std::string& key) const {
  double d = get_double(key);
  if (!(d > 0)) fail(key, fmt::format("{} must be > 0", d));
  return d;
}

bool YamlReader::get_bool(const std::string& key) const {
  YAML::Node v = value(key);
  const std::string s = v.IsScalar() ? v.Scalar() : "";
  if (s == "true" || s == "True" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "False" || s == "no" || s == "off") return false;
  fail(key, fmt::format("expected true or false, got '{}'", s));
}
bool YamlReader::get_bool(const std::string& key, bool dflt) const {
  return has(key) ? get_bool(key) : dflt;
}

std::string YamlReader::get_enum(const std::string& key,
                                 std::initializer_list<const char*> choices) const {
  std::string s = get_string(key);
  std::string list;
  for (const char* c : choices) {
    if (s == c) return s;
    list += (list.empty() ? "" : ", ") + std::string(c);
  }
  fail(key, fmt::format("'{}' is not one of: {}", s, list));
}
std::string YamlReader::get_enum(const std::string& key, std::initializer_list<const char*> choices,
                                 const std::string& dflt) const {
  return has(key) ? get_enum(key, choices) : dflt;
}

}  // namespace strata
