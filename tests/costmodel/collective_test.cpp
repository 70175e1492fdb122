#include "costmodel/collective.h"

#include <gtest/gtest.h>

#include "common/errors.h"

namespace sc = strata::costmodel;

namespace {
const sc::Collective kAll[] = {sc::Collective::AllReduce,  sc::Collective::AllGather,
                               sc::Collective::ReduceScatter, sc::Collective::Broadcast,
                               sc::Collective::Reduce,     sc::Collective::AllToAll,
                               sc::Collective::SendRecv};
}

TEST(BusFactor, MatchesTheNcclTestsTable) {
  EXPECT_DOUBLE_EQ(sc::bus_factor(sc::Collective::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(sc::bus_factor(sc::Collective::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(sc::bus_factor(sc::Collective::ReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(sc::bus_factor(sc::Collective::AllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(sc::bus_factor(sc::Collective::Broadcast, 16), 1.0);
  EXPECT_DOUBLE_EQ(sc::bus_factor(sc::Collective::Reduce, 16), 1.0);
  EXPECT_DOUBLE_EQ(sc::bus_factor(sc::Collective::SendRecv, 2), 1.0);
  EXPECT_DOUBLE_EQ(sc::bus_factor(sc::Collective::AllReduce, 1), 0.0);
  EXPECT_THROW(sc::bus_factor(sc::Collective::AllReduce, 0), strata::InputError);
}

TEST(BusFactor, TimeToBusbwToTimeRoundTrips) {
  // The profiler's direction (time -> busbw) and the cost model's (busbw -> time).
  for (sc::Collective c : kAll)
    for (int n : {2, 3, 4, 8, 16, 1024})
      for (double bytes : {8.0, 4096.0, 1048576.0, 1073741824.0})
        for (double time_s : {1e-6, 3.7e-4, 2.5}) {
          double algbw = bytes / time_s;
          double busbw = algbw * sc::bus_factor(c, n);
          double back = bytes * sc::bus_factor(c, n) / busbw;
          EXPECT_NEAR(back, time_s, 1e-12 * time_s) << sc::to_string(c) << " n=" << n;
        }
}

TEST(Collective, NamesRoundTripAndUnknownNamesListChoices) {
  for (sc::Collective c : kAll) EXPECT_EQ(sc::collective_from_string(sc::to_string(c)), c);
  try {
    sc::collective_from_string("allreduce");
    FAIL();
  } catch (const strata::InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("allreduce"), std::string::npos);
    EXPECT_NE(m.find("all_reduce"), std::string::npos);
  }
}
