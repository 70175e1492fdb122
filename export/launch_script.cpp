#include "export/launch_script.h"

#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <vector>

#include <fmt/format.h>

#include "common/errors.h"

namespace strata::exports {

namespace {

// Lines with their `\` continuations joined and comments (a # starting a word) dropped.
std::vector<std::string> logical_lines(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      cur += c;
      if (c == quote) quote = 0;
    } else if (c == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
      ++i;
      cur += ' ';
    } else if (c == '\'' || c == '"') {
      quote = c;
      cur += c;
    } else if (c == '#' && (cur.empty() || std::isspace(static_cast<unsigned char>(cur.back())))) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '\n') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string trim(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

struct Variables {
  std::map<std::string, std::string> scalars;
  std::map<std::string, std::string> arrays;  // the words, space-joined as written

  // $NAME, ${NAME}, ${NAME[@]}, ${NAME[*]} and $(( expr )) in `s`; unknown names stay.
  std::string expand(const std::string& s) const {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      // "${NAME[@]}": bash gives each element its own word, so the quotes go.
      if (s[i] == '"' && s.compare(i + 1, 2, "${") == 0) {
        const auto close = s.find('}', i + 3);
        if (close != std::string::npos && close + 1 < s.size() && s[close + 1] == '"' &&
            s.compare(close - 3, 3, "[@]") == 0) {
          out += expand(s.substr(i + 1, close - i));
          i = close + 1;
          continue;
        }
      }
      if (s[i] != '$' || i + 1 >= s.size()) {
        out += s[i];
        continue;
      }
      if (s.compare(i, 3, "$((") == 0) {
        const auto end = s.find("))", i + 3);
        if (end != std::string::npos) {
          if (const auto v = arithmetic(expand(s.substr(i + 3, end - i - 3)))) {
            out += std::to_string(*v);
            i = end + 1;
            continue;
          }
        }
        out += s[i];
        continue;
      }
      std::string name;
      std::size_t next = i + 1;
      bool array = false;
      if (s[next] == '{') {
        const auto close = s.find('}', next);
        if (close == std::string::npos) {
          out += s[i];
          continue;
        }
        name = s.substr(next + 1, close - next - 1);
        if (name.size() > 3 && (name.ends_with("[@]") || name.ends_with("[*]"))) {
          name.resize(name.size() - 3);
          array = true;
        }
        next = close + 1;
      } else {
        while (next < s.size() && (std::isalnum(static_cast<unsigned char>(s[next])) || s[next] == '_')) ++next;
        name = s.substr(i + 1, next - i - 1);
      }
      const auto a = arrays.find(name);
      const auto v = scalars.find(name);
      if (array && a != arrays.end()) out += a->second;
      else if (!array && v != scalars.end()) out += v->second;
      else if (!array && a != arrays.end()) out += a->second.substr(0, a->second.find(' '));  // $ARR = first
      else {
        out += s.substr(i, next - i);  // unknown (a positional parameter, the environment): as written
      }
      i = next - 1;
    }
    return out;
  }

  // + - * / on non-negative integer literals, * and / before + and -; nullopt on
  // anything else (a name left unexpanded, parentheses, overflow-sized numbers).
  static std::optional<std::int64_t> arithmetic(const std::string& expr) {
    std::vector<std::string> t;  // number, op, number, op, ...
    for (std::size_t i = 0; i < expr.size();) {
      const char c = expr[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        std::size_t j = i;
        while (j < expr.size() && std::isdigit(static_cast<unsigned char>(expr[j]))) ++j;
        if (j - i > 15) return std::nullopt;
        t.push_back(expr.substr(i, j - i));
        i = j;
      } else if (c == '+' || c == '-' || c == '*' || c == '/') {
        t.push_back(std::string(1, c));
        ++i;
      } else {
        return std::nullopt;
      }
    }
    const auto is_number = [](const std::string& x) { return std::isdigit(static_cast<unsigned char>(x[0])) != 0; };
    if (t.empty() || t.size() % 2 == 0) return std::nullopt;
    for (std::size_t k = 0; k < t.size(); ++k)
      if (is_number(t[k]) != (k % 2 == 0)) return std::nullopt;
    std::vector<std::int64_t> terms = {std::stoll(t[0])};
    std::vector<char> ops;
    for (std::size_t k = 1; k + 1 < t.size(); k += 2) {
      const std::int64_t x = std::stoll(t[k + 1]);
      const char op = t[k][0];
      if (op == '*') {
        terms.back() *= x;
      } else if (op == '/') {
        if (x == 0) return std::nullopt;
        terms.back() /= x;
      } else {
        ops.push_back(op);
        terms.push_back(x);
      }
    }
    std::int64_t v = terms[0];
    for (std::size_t k = 0; k < ops.size(); ++k) v = ops[k] == '+' ? v + terms[k + 1] : v - terms[k + 1];
    return v;
  }
};

bool is_assignment(const std::string& line, std::string& name, std::string& value) {
  static const std::regex assign(R"(^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$)");
  std::smatch m;
  if (!std::regex_match(line, m, assign)) return false;
  name = m[1];
  value = m[2];
  return true;
}

std::string unquote(const std::string& v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
    return v.substr(1, v.size() - 2);
  return v;
}

bool runs_a_script(const std::string& line) {
  static const std::regex py(R"((^|\s)\S+\.py(\s|$))");
  return std::regex_search(line, py);
}

}  // namespace

std::string expand_launch_script(const std::string& text, const std::string& source) {
  const std::vector<std::string> lines = logical_lines(text);
  Variables vars;
  bool assigns = false;
  std::optional<std::string> command;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string line = trim(lines[i]);
    std::string name, value;
    if (is_assignment(line, name, value)) {
      assigns = true;
      if (!value.empty() && value.front() == '(') {  // an array, maybe over several lines
        std::string body = value.substr(1);
        std::size_t j = i;
        while (body.find(')') == std::string::npos) {
          if (++j >= lines.size())
            input_error("{}: the array {}=( ... ) never closes with ')'", source, name);
          body += " " + trim(lines[j]);
        }
        i = j;
        body = trim(body.substr(0, body.rfind(')')));
        // Runs of blanks collapse: the array reads as single-spaced words.
        vars.arrays[name] = std::regex_replace(vars.expand(body), std::regex(R"(\s+)"), " ");
        continue;
      }
      vars.scalars[name] = unquote(vars.expand(value));
      continue;
    }
    if (!command && runs_a_script(line)) command = vars.expand(line);
  }
  if (!assigns || !command) return text;
  return *command + "\n";
}

}  // namespace strata::exports
