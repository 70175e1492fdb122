// Megatron-LM's --moe-layer-freq values: the Python list patterns it evaluates, expanded by
// hand, and the leading-dense-blocks layouts strata models.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "export/megatron_layer_pattern.h"

using strata::InputError;
using strata::exports::eval_layer_pattern;
using strata::exports::first_dense_layers_from_moe_layer_freq;

namespace {
std::string message(const std::string& pattern, std::size_t max_len = 100) {
  try {
    eval_layer_pattern(pattern, max_len, "--moe-layer-freq", "a");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(MegatronLayerPattern, ExpandsTheExamplesOfMegatronsHelpText) {
  // "([1]*3+[0]*1)*3" evaluates to [1,1,1,0,1,1,1,0,1,1,1,0] (arguments.py help).
  EXPECT_EQ(eval_layer_pattern("([1]*3+[0]*1)*3", 100, "f", "a"),
            (std::vector<int>{1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0}));
  // "([0]+[1]*23)": 1 dense layer followed by 23 expert layers.
  const auto one_dense = eval_layer_pattern("([0]+[1]*23)", 100, "f", "a");
  ASSERT_EQ(one_dense.size(), 24u);
  EXPECT_EQ(one_dense.front(), 0);
  EXPECT_EQ(one_dense[1], 1);
  // Integer products and a repeat written before the list, as Python allows.
  EXPECT_EQ(eval_layer_pattern("2*[0,1]+[1]*(1+1)", 100, "f", "a"), (std::vector<int>{0, 1, 0, 1, 1, 1}));
  EXPECT_EQ(eval_layer_pattern("[]+[1]", 100, "f", "a"), (std::vector<int>{1}));
}

TEST(MegatronLayerPattern, FirstDenseLayersOfDeepSeekV3AndRefusals) {
  EXPECT_EQ(first_dense_layers_from_moe_layer_freq("([0]*3+[1]*58)", 61, "a"), 3);
  EXPECT_EQ(first_dense_layers_from_moe_layer_freq("[0]*3+[1]*58", 61, "a"), 3);  // unparenthesized
  EXPECT_EQ(first_dense_layers_from_moe_layer_freq("1", 61, "a"), 0);
  EXPECT_EQ(first_dense_layers_from_moe_layer_freq("[1]*61", 61, "a"), 0);
  const auto refusal = [](const std::string& v, std::int64_t layers) {
    try {
      first_dense_layers_from_moe_layer_freq(v, layers, "a");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(refusal("2", 8).find("'2' is not modelled"), std::string::npos);  // every 2nd block
  EXPECT_NE(refusal("([1]*3+[0]*1)*2", 8).find("block 4 is dense after an MoE block"), std::string::npos);
  EXPECT_NE(refusal("[0]*3+[1]*58", 60).find("longer than 60 entries"), std::string::npos);
  EXPECT_NE(refusal("[0]*3+[1]*5", 9).find("has 8 entries, --num-layers is 9"), std::string::npos);
  EXPECT_NE(refusal("[0]*4", 4).find("every block dense"), std::string::npos);
}

TEST(MegatronLayerPattern, RefusesWhatMegatronWouldNotEvaluateOrStrataCannotHold) {
  EXPECT_NE(message("[0] * 3").find("unexpected ' '"), std::string::npos);  // Megatron rejects spaces
  EXPECT_NE(message("[2]*3").find("entry 2 is not 0"), std::string::npos);
  EXPECT_NE(message("[0]*999999999").find("longer than 100 entries"), std::string::npos);
  EXPECT_NE(message("[0]*9999999999").find("a number exceeds"), std::string::npos);
  EXPECT_NE(message("3*4").find("is a number, not a list"), std::string::npos);
  EXPECT_NE(message("1+[0]").find("+ joins a list and a number"), std::string::npos);
  EXPECT_NE(message("[0]*[1]").find("* multiplies two lists"), std::string::npos);
  EXPECT_NE(message("([0]").find("'(' is not closed"), std::string::npos);
  EXPECT_NE(message("[0,1").find("'[' is not closed"), std::string::npos);
  EXPECT_NE(message(std::string(500, '(')).find("nested deeper than"), std::string::npos);
  EXPECT_NE(message("[0]*").find("ends early"), std::string::npos);
  EXPECT_NE(message("__import__('os')").find("expected a number"), std::string::npos);
}
