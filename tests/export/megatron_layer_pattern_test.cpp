// Megatron-LM's --moe-layer-freq values: the Python list patterns it evaluates, expanded by
// hand, and the leading-dense-blocks layouts strata models.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "export/megatron_layer_pattern.h"
#include "tests/input_error_of.h"

using strata::InputError;
using strata::exports::eval_layer_pattern;
using strata::exports::moe_layer_freq_pattern;
using strata::exports::moe_layout_from_moe_layer_freq;
using strata::exports::MoeLayerLayout;

namespace {
std::string message(const std::string& pattern, std::size_t max_len = 100) {
  return strata::testing::input_error_of([&] { eval_layer_pattern(pattern, max_len, "--moe-layer-freq", "a"); });
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

TEST(MegatronLayerPattern, LayoutsOfDeepSeekV3AndLlama4AndRefusals) {
  using L = MoeLayerLayout;
  EXPECT_EQ(moe_layout_from_moe_layer_freq("([0]*3+[1]*58)", 61, "a"), (L{3, 1}));
  EXPECT_EQ(moe_layout_from_moe_layer_freq("[0]*3+[1]*58", 61, "a"), (L{3, 1}));  // unparenthesized
  EXPECT_EQ(moe_layout_from_moe_layer_freq("1", 61, "a"), (L{0, 1}));
  EXPECT_EQ(moe_layout_from_moe_layer_freq("[1]*61", 61, "a"), (L{0, 1}));
  // Llama-4 Maverick as NeMo's Llama4Config writes it ([0,1]*24) and as the export does.
  EXPECT_EQ(moe_layout_from_moe_layer_freq("[0,1]*24", 48, "a"), (L{0, 2}));
  EXPECT_EQ(moe_layout_from_moe_layer_freq("([0]*1+[1]*1)*24", 48, "a"), (L{0, 2}));
  // A dense prefix with a step, a dense tail, one MoE block.
  // (Blocks 4, 6, 8: read as 2 dense blocks then every second one, the same blocks as 3 dense.)
  EXPECT_EQ(moe_layout_from_moe_layer_freq("[0]*3+[1]+[0,1]*2", 8, "a"), (L{2, 2}));
  EXPECT_EQ(moe_layout_from_moe_layer_freq("[0,0,1]*2+[0]", 7, "a"), (L{0, 3}));
  EXPECT_EQ(moe_layout_from_moe_layer_freq("[0]*5+[1]", 6, "a"), (L{0, 6}));
  const auto refusal = [](const std::string& v, std::int64_t layers) {
    try {
      moe_layout_from_moe_layer_freq(v, layers, "a");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Megatron's integer 2 makes blocks 1, 3, 5, ... MoE (counted from 1): not strata's rule.
  EXPECT_NE(refusal("2", 8).find("'2' is not modelled: Megatron's integer N makes blocks 1, N + 1"),
            std::string::npos);
  EXPECT_NE(refusal("([1]*3+[0]*1)*2", 8).find("block 4 (dense) breaks the layouts strata models"),
            std::string::npos);
  EXPECT_NE(refusal("[1,0]*4", 8).find("block 1 (MoE) breaks"), std::string::npos);
  EXPECT_NE(refusal("[0]*3+[1]*58", 60).find("longer than 60 entries"), std::string::npos);
  EXPECT_NE(refusal("[0]*3+[1]*5", 9).find("has 8 entries, --num-layers is 9"), std::string::npos);
  EXPECT_NE(refusal("[0]*4", 4).find("every block dense"), std::string::npos);
  // The export's pattern reads back to the same layout, for every layout of 12 blocks.
  for (std::int64_t k = 1; k <= 12; ++k)
    for (std::int64_t d = 0; d < 12; ++d) {
      if ((d / k + 1) * k > 12) continue;  // no MoE block left
      // (One MoE block reads back as its own step: the same blocks, e.g. {6, 6} as {0, 12}.)
      const std::string p = moe_layer_freq_pattern({d, k}, 12);
      const L back = moe_layout_from_moe_layer_freq(p, 12, "a");
      EXPECT_EQ(eval_layer_pattern(moe_layer_freq_pattern(back, 12), 12, "f", "a"), eval_layer_pattern(p, 12, "f", "a"))
          << p;
      if ((d / k + 2) * k <= 12) {
        EXPECT_EQ(back, (L{(d / k) * k, k})) << p;
      }
    }
  EXPECT_EQ(moe_layer_freq_pattern({0, 2}, 48), "([0]*1+[1]*1)*24");
  EXPECT_EQ(moe_layer_freq_pattern({3, 1}, 61), "([0]*3+[1]*58)");
  EXPECT_EQ(moe_layer_freq_pattern({3, 2}, 9), "[0]*2+([0]*1+[1]*1)*3+[0]*1");
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
