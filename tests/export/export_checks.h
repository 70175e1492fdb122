// What the export tests check outputs with: the framework name tables, argument types,
// the rendered launch command and TOML read back into maps, and an export's error text.
#pragma once
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "export/export_formats.h"
#include "tests/export/test_plans.h"
#include "tests/input_error_of.h"

namespace strata::exports::testing {

// export/frameworks/<file>, read from the source tree.
inline YAML::Node table(const std::string& file) {
  return YAML::LoadFile(std::string(STRATA_SOURCE_DIR) + "/export/frameworks/" + file);
}

inline bool is_int(const std::string& v) {
  long long x = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), x);
  return r.ec == std::errc() && r.ptr == v.data() + v.size();
}
inline bool is_number(const std::string& v) {
  try {
    std::size_t n = 0;
    std::stod(v, &n);
    return n == v.size();
  } catch (...) {
    return false;
  }
}

// A command-line argument against a table type (int, float, str, flag, other, list[...]).
inline void expect_arg_type(const YAML::Node& args, const std::string& flag, const std::string& value) {
  ASSERT_TRUE(args[flag]) << flag << " is not an argument of the framework at the pinned commit";
  const std::string type = args[flag].as<std::string>();
  if (type == "flag") EXPECT_TRUE(value.empty()) << flag << " takes no value, got " << value;
  else EXPECT_FALSE(value.empty()) << flag << " needs a value";
  if (type == "int") { EXPECT_TRUE(is_int(value)) << flag << " " << value; }
  if (type == "float") { EXPECT_TRUE(is_number(value)) << flag << " " << value; }
}

// Flag -> value of the rendered launch command: comments (and, in a script of several
// nodes, its environment and rendezvous lines), then `torchrun ... script.py \`, then one
// `  --flag [value] \` per line.
inline std::map<std::string, std::string> rendered_flags(const std::string& text) {
  std::map<std::string, std::string> flags;
  std::istringstream in(text);
  std::string line;
  bool seen_command = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') {
      EXPECT_FALSE(seen_command) << "comment after the command: " << line;
      continue;
    }
    if (line.size() >= 2 && line.compare(line.size() - 2, 2, " \\") == 0) line.resize(line.size() - 2);
    if (!seen_command) {
      seen_command = line.rfind("torchrun ", 0) == 0;
      EXPECT_TRUE(seen_command || text.rfind("#!/bin/bash\n", 0) == 0)
          << "a one-line export holds only comments before torchrun: " << line;
      continue;
    }
    EXPECT_EQ(line.rfind("  --", 0), 0u) << "not an argument line: " << line;
    line = line.substr(2);
    const auto sp = line.find(' ');
    const std::string name = line.substr(0, sp);
    EXPECT_EQ(flags.count(name), 0u) << "repeated " << name;
    std::string value = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'')
      value = value.substr(1, value.size() - 2);  // shell-quoted (no quote inside for our values)
    flags[name] = value;
  }
  return flags;
}

// Flag -> value of an argument list.
inline std::map<std::string, std::string> arg_map(const std::vector<Arg>& args) {
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : args) out[k] = v;
  return out;
}

// The export's InputError text, or "no error".
inline std::string export_error(const planner::Plan& p, ExportTarget t,
                                const costmodel::SoftwareStack& stack = overlap_stack()) {
  return strata::testing::input_error_of([&] { export_plan(p, stack, t); });
}

// [section] and `key = value` lines; an array value may continue over lines until `]`.
inline std::map<std::string, std::map<std::string, std::string>> toml_sections(const std::string& text) {
  std::map<std::string, std::map<std::string, std::string>> out;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line.substr(1, line.find(']') - 1);
      EXPECT_EQ(out.count(section), 0u) << "repeated section " << section;
      out[section];
      continue;
    }
    const auto eq = line.find(" = ");
    EXPECT_NE(eq, std::string::npos) << line;
    if (eq == std::string::npos) continue;
    std::string value = line.substr(eq + 3);
    if (value == "[") {
      std::string more;
      while (std::getline(in, more) && more != "]") value += more;
      value += "]";
    }
    if (auto c = value.find("  #"); c != std::string::npos) value.resize(c);
    out[section][line.substr(0, eq)] = value;
  }
  return out;
}

}  // namespace strata::exports::testing
