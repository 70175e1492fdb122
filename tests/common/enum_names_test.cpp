#include "common/enum_names.h"

#include <gtest/gtest.h>

namespace {

enum class Color { Red, Green, Blue, Unnamed };
constexpr strata::EnumName<Color> kColors[] = {{Color::Red, "red"}, {Color::Green, "green"}, {Color::Blue, "blue"}};

TEST(EnumNames, EveryValueRoundTripsThroughItsName) {
  for (const Color c : {Color::Red, Color::Green, Color::Blue})
    EXPECT_EQ(strata::enum_from_name(strata::enum_name(c, kColors), kColors), c);
  EXPECT_STREQ(strata::enum_name(Color::Green, kColors), "green");
}

TEST(EnumNames, UnknownNamesAndUnnamedValuesAreSaidSo) {
  EXPECT_FALSE(strata::enum_from_name("Red", kColors));  // names are case-sensitive
  EXPECT_FALSE(strata::enum_from_name("", kColors));
  EXPECT_STREQ(strata::enum_name(Color::Unnamed, kColors), "?");
}

TEST(EnumNames, ListsTheNamesInTableOrder) {
  EXPECT_EQ(strata::enum_names(kColors), "red, green, blue");
  EXPECT_EQ(strata::enum_names(kColors, " or "), "red, green or blue");
  constexpr strata::EnumName<Color> one[] = {{Color::Red, "red"}};
  EXPECT_EQ(strata::enum_names(one, " or "), "red");
}

}  // namespace
