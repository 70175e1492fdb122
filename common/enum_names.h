// Enum <-> name tables. One table per enum, written once, gives its to_string, its parse
// and the list of names an error offers, so the three cannot drift apart (as hand-written
// switches, value loops and "expected one of: ..." strings did). A value missing from the
// table is named "?"; the tests of each parser round-trip every value.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace strata {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

template <typename E, std::size_t N>
constexpr const char* enum_name(E value, const EnumName<E> (&table)[N]) {
  for (const auto& e : table)
    if (e.value == value) return e.name;
  return "?";
}

template <typename E, std::size_t N>
constexpr std::optional<E> enum_from_name(std::string_view name, const EnumName<E> (&table)[N]) {
  for (const auto& e : table)
    if (name == e.name) return e.value;
  return std::nullopt;
}

// The names in table order, ", " between them and `last_sep` before the last: "a, b, c",
// or with " or ", "a, b or c".
template <typename E, std::size_t N>
std::string enum_names(const EnumName<E> (&table)[N], std::string_view last_sep = ", ") {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? last_sep : std::string_view(", ");
    out += table[i].name;
  }
  return out;
}

}  // namespace strata
