// MpiCommunicator under `mpirun -np 2` and `-np 4 --oversubscribe`: every collective
// against a closed form, sub-communicators from groups, and MPI errors as DeviceError.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "common/errors.h"
#include "kernels/cpu/mpi_communicator.h"
#include "kernels/cpu/mpi_placement.h"

namespace strata::kernels {
namespace {

// Counts of an uneven collective on n ranks: rank q has per_rank * q + extra elements,
// rank 1 none (a rank outside a ZeRO-3 layer's shard).
std::vector<std::size_t> uneven_counts(int n, std::size_t per_rank, std::size_t extra) {
  std::vector<std::size_t> counts(static_cast<std::size_t>(n));
  for (int q = 0; q < n; ++q)
    counts[static_cast<std::size_t>(q)] = q == 1 ? 0 : per_rank * static_cast<std::size_t>(q) + extra;
  return counts;
}

TEST(MpiCommunicator, WorldHasRankAndSize) {
  auto w = MpiCommunicator::world();
  int r = -1, n = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  EXPECT_EQ(w->rank(), r);
  EXPECT_EQ(w->size(), n);
  EXPECT_STREQ(w->transport(), "mpi");
}

TEST(MpiCommunicator, AllReduceOfRankPlusIndexHasKnownSum) {
  auto w = MpiCommunicator::world();
  const int n = w->size(), r = w->rank();
  for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{1} << 20}) {
    std::vector<float> x(count);
    for (std::size_t i = 0; i < count; ++i) x[i] = float(r + int(i % 4096));
    w->all_reduce_sum(x.data(), count);
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(x[i], float(n * int(i % 4096) + n * (n - 1) / 2)) << "count " << count << " i " << i;
  }
}

TEST(MpiCommunicator, AllGatherConcatenatesInRankOrder) {
  auto w = MpiCommunicator::world();
  const int n = w->size(), r = w->rank();
  const std::size_t c = 37;
  std::vector<float> send(c), recv(c * n, -1);
  for (std::size_t i = 0; i < c; ++i) send[i] = float(100 * r + int(i));
  w->all_gather(send.data(), recv.data(), c);
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < c; ++i) ASSERT_EQ(recv[q * c + i], float(100 * q + int(i)));
  // In place: the rank's own slice already sits in the output buffer.
  std::vector<float> inplace(c * n, -1);
  for (std::size_t i = 0; i < c; ++i) inplace[r * c + i] = float(7 * r + int(i));
  w->all_gather(inplace.data() + r * c, inplace.data(), c);
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < c; ++i) ASSERT_EQ(inplace[q * c + i], float(7 * q + int(i)));
}

TEST(MpiCommunicator, ReduceScatterGivesEachRankItsSummedSlice) {
  auto w = MpiCommunicator::world();
  const int n = w->size(), r = w->rank();
  const std::size_t c = 53;
  std::vector<float> send(c * n), recv(c, -1);
  for (std::size_t j = 0; j < send.size(); ++j) send[j] = float(r * 3 + int(j));
  w->reduce_scatter_sum(send.data(), recv.data(), c);
  for (std::size_t i = 0; i < c; ++i) {
    float expect = 0;
    for (int q = 0; q < n; ++q) expect += float(q * 3 + int(r * c + i));
    ASSERT_EQ(recv[i], expect);
  }
}

TEST(MpiCommunicator, NonBlockingCollectivesInFlightTogether) {
  auto w = MpiCommunicator::world();
  const int n = w->size(), r = w->rank();
  // Two all-reduces and an uneven reduce-scatter (rank 1 receives nothing) in flight at
  // once, completed out of issue order.
  const std::vector<std::size_t> counts = uneven_counts(n, 7, 3);
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  std::size_t offset = 0;
  for (int q = 0; q < r; ++q) offset += counts[static_cast<std::size_t>(q)];
  std::vector<float> a(1 << 16), b(999), send(total), recv(counts[static_cast<std::size_t>(r)], -1);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = float(r + int(i % 100));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = float(2 * r - int(i % 7));
  for (std::size_t i = 0; i < total; ++i) send[i] = float(5 * r + int(i));
  auto ra = w->iall_reduce_sum(a.data(), a.size());
  auto rs = w->ireduce_scatter_sum(send.data(), recv.data(), counts);
  auto rb = w->iall_reduce_sum(b.data(), b.size());
  rb->wait();
  while (!rs->done()) {
  }
  ra->wait();
  EXPECT_TRUE(ra->done());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], float(n * int(i % 100) + n * (n - 1) / 2));
  for (std::size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b[i], float(n * (n - 1) - n * int(i % 7)));
  for (std::size_t i = 0; i < recv.size(); ++i)
    ASSERT_EQ(recv[i], float(5 * n * (n - 1) / 2 + n * int(offset + i))) << "rank " << r << " i " << i;
  // The base class's blocking fallback (host memory) gives the same slices.
  std::vector<float> fallback(recv.size(), -1);
  w->Communicator::ireduce_scatter_sum(send.data(), fallback.data(), counts)->wait();
  EXPECT_EQ(fallback, recv);
}

TEST(MpiCommunicator, UnevenAllGatherConcatenatesInRankOrder) {
  auto w = MpiCommunicator::world();
  const int n = w->size(), r = w->rank();
  // rank q sends 5q + 2 values, rank 1 none (a ZeRO-3 layer outside its shard)
  const std::vector<std::size_t> counts = uneven_counts(n, 5, 2);
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  std::vector<float> send(counts[static_cast<std::size_t>(r)]), recv(total, -1);
  for (std::size_t i = 0; i < send.size(); ++i) send[i] = float(1000 * r + int(i));
  auto req = w->iall_gather(send.data(), recv.data(), counts);
  req->wait();
  std::size_t at = 0;
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < counts[static_cast<std::size_t>(q)]; ++i, ++at)
      ASSERT_EQ(recv[at], float(1000 * q + int(i))) << "rank " << r << " from " << q << " [" << i << "]";
  // The base class's blocking fallback (host memory) gives the same buffer.
  std::vector<float> fallback(total, -1);
  w->Communicator::iall_gather(send.data(), fallback.data(), counts)->wait();
  EXPECT_EQ(fallback, recv);
}

TEST(MpiCommunicator, AllToAllTransposesBlocks) {
  auto w = MpiCommunicator::world();
  const int n = w->size(), r = w->rank();
  const std::size_t c = 11;
  std::vector<float> send(c * n), recv(c * n, -1);
  for (int d = 0; d < n; ++d)
    for (std::size_t i = 0; i < c; ++i) send[d * c + i] = float(1000 * r + 10 * d + int(i));
  w->all_to_all(send.data(), recv.data(), c);
  for (int q = 0; q < n; ++q)
    for (std::size_t i = 0; i < c; ++i) ASSERT_EQ(recv[q * c + i], float(1000 * q + 10 * r + int(i)));
}

TEST(MpiCommunicator, BroadcastFromEveryRoot) {
  auto w = MpiCommunicator::world();
  for (int root = 0; root < w->size(); ++root) {
    std::vector<float> x(29, -1);
    if (w->rank() == root)
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(root * 50 + int(i));
    w->broadcast(x.data(), x.size(), root);
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], float(root * 50 + int(i)));
  }
}

TEST(MpiCommunicator, SendRecvPairsAndRingShift) {
  auto w = MpiCommunicator::world();
  const int n = w->size(), r = w->rank();
  // Pairs (0,1), (2,3): even sends then receives, odd the reverse.
  if (n % 2 == 0) {
    std::vector<float> out(64, float(r)), in(64, -1);
    int peer = r ^ 1;
    if (r % 2 == 0) {
      w->send(out.data(), out.size(), peer);
      w->recv(in.data(), in.size(), peer);
    } else {
      w->recv(in.data(), in.size(), peer);
      w->send(out.data(), out.size(), peer);
    }
    for (float v : in) ASSERT_EQ(v, float(peer));
  }
  // Ring shift, large enough for rendezvous: the fused MPI_Sendrecv and the base
  // class's parity-ordered default must both complete and deliver rank-1's data.
  const std::size_t c = 1 << 18;
  std::vector<float> out(c), in(c, -1);
  for (std::size_t i = 0; i < c; ++i) out[i] = float(r * 10 + int(i % 7));
  const int dst = (r + 1) % n, src = (r - 1 + n) % n;
  w->send_recv(out.data(), dst, in.data(), src, c);
  for (std::size_t i = 0; i < c; ++i) ASSERT_EQ(in[i], float(src * 10 + int(i % 7)));
  std::fill(in.begin(), in.end(), -1.0f);
  w->Communicator::send_recv(out.data(), dst, in.data(), src, c);
  for (std::size_t i = 0; i < c; ++i) ASSERT_EQ(in[i], float(src * 10 + int(i % 7)));
}

TEST(MpiCommunicator, FromGroupsBuildsDisjointSubCommunicators) {
  int n = 0, r = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  // Pairs of consecutive ranks, listed in reverse order inside each pair; an odd last
  // rank forms its own group.
  std::vector<std::vector<int>> groups;
  for (int s = 0; s < n; s += 2) groups.push_back(s + 1 < n ? std::vector<int>{s + 1, s} : std::vector<int>{s});
  auto g = MpiCommunicator::from_groups(groups);
  ASSERT_NE(g, nullptr);
  const int base = r - r % 2;
  const int members = base + 1 < n ? 2 : 1;
  EXPECT_EQ(g->size(), members);
  EXPECT_EQ(g->rank(), members == 2 ? (r == base + 1 ? 0 : 1) : 0);  // position in its list
  float x = float(r);
  g->all_reduce_sum(&x, 1);
  EXPECT_EQ(x, members == 2 ? float(2 * base + 1) : float(r));
  // Only the caller's own group: the same split.
  std::vector<int> own = members == 2 ? std::vector<int>{base + 1, base} : std::vector<int>{base};
  auto g2 = MpiCommunicator::from_groups({own});
  ASSERT_NE(g2, nullptr);
  EXPECT_EQ(g2->size(), members);
  EXPECT_EQ(g2->rank(), g->rank());
}

TEST(MpiCommunicator, FromGroupsRejectsBadGroupsOnEveryRank) {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  EXPECT_THROW(MpiCommunicator::from_groups({{0, 0}}), InputError);
  EXPECT_THROW(MpiCommunicator::from_groups({{n}}), InputError);
  EXPECT_THROW(MpiCommunicator::from_groups({{}}), InputError);
}

TEST(MpiCommunicator, RankOutsideEveryGroupGetsNull) {
  auto g = MpiCommunicator::from_groups({{0}});
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  if (r == 0) {
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->size(), 1);
  } else {
    EXPECT_EQ(g, nullptr);
  }
}

TEST(MpiCommunicator, MpiErrorsBecomeDeviceErrorsWithTheMpiMessage) {
  auto w = MpiCommunicator::world();
  float x = 0;
  try {
    w->send(&x, 1, w->size() + 5);  // no such rank
    FAIL() << "no error";
  } catch (const DeviceError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("MPI_Send"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mpi_communicator.cpp:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank"), std::string::npos) << msg;  // MPI's "invalid rank" text
  }
}

TEST(MpiPlacement, OneNodeHoldsEveryRank) {
  MpiPlacement p = mpi_placement();
  EXPECT_EQ(p.nodes, 1);
  EXPECT_EQ(p.local_size, p.world_size);
  EXPECT_EQ(p.local_rank, p.world_rank);
  EXPECT_FALSE(p.host.empty());
  EXPECT_NE(mpi_library_version().find("MPI"), std::string::npos);
}

}  // namespace
}  // namespace strata::kernels
