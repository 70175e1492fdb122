#include "common/one_line.h"

#include <gtest/gtest.h>

TEST(OneLine, ControlCharactersAndBackslashesBecomeEscapesEverythingElseStays) {
  EXPECT_EQ(strata::one_line("a\nb\r\tc\\d\x01\x7f"), "a\\nb\\r\\tc\\\\d\\x01\\x7f");
  EXPECT_EQ(strata::one_line("llama-3 70B \"x\" | é"), "llama-3 70B \"x\" | é");
}
