// Strict YAML reading: every value is read through a YamlReader that knows the
// file and key path, so errors say `file:line: key.path: what was expected`, and
// unknown keys are rejected (a typo is never silently ignored).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace strata {

// Parses YAML text; throws InputError naming `source` and the line on syntax errors
// or an empty document.
YAML::Node parse_yaml(const std::string& text, const std::string& source);
// Reads and parses a YAML file (InputError when missing or malformed).
YAML::Node load_yaml_file(const std::string& path);

class YamlReader {
 public:
  YamlReader(YAML::Node node, std::string source, std::string path = "");

  const YAML::Node& node() const { return node_; }
  const std::string& source() const { return source_; }
  const std::string& path() const { return path_; }
  bool has(const std::string& key) const;
  YamlReader child(const std::string& key) const;        // required map/seq child
  YamlReader element(std::size_t i) const;               // sequence element
  std::size_t size() const;                              // sequence length

  // Fails if the map holds a key outside `allowed` (names the key and the allowed set).
  void expect_keys(std::initializer_list<const char*> allowed) const;
  void expect_map() const;
  void expect_sequence() const;

  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& dflt) const;
  std::int64_t get_int(const std::string& key) const;
  std::int64_t get_int(const std::string& key, std::int64_t dflt) const;
  // Integer in [lo, hi]; the error states the range.
  std::int64_t get_int_in(const std::string& key, std::int64_t lo, std::int64_t hi) const;
  std::int64_t get_int_in(const std::string& key, std::int64_t lo, std::int64_t hi,
                          std::int64_t dflt) const;
  double get_double(const std::string& key) const;
  double get_double(const std::string& key, double dflt) const;
  double get_positive(const std::string& key) const;  // finite, > 0
  double as_double() const;  // this node itself (a sequence element): finite number
  bool get_bool(const std::string& key) const;
  bool get_bool(const std::string& key, bool dflt) const;
  // One of `choices`; error lists them.
  std::string get_enum(const std::string& key, std::initializer_list<const char*> choices) const;
  std::string get_enum(const std::string& key, std::initializer_list<const char*> choices,
                       const std::string& dflt) const;

  // Error prefix for this node: "source:line: path".
  std::string where(const std::string& key = "") const;
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

 private:
  YAML::Node value(const std::string& key) const;
  YAML::Node node_;
  std::string source_;
  std::string path_;
};

}  // namespace strata
