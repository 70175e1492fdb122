#include "kernels/profiler/collective_sweep.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include <fmt/format.h>

#include "kernels/backend.h"
#include "kernels/buffer.h"
#include "kernels/memory_space.h"
#include "kernels/profiler/group_reduce.h"

namespace strata::kernels::profiler {

namespace {

// Distinct small integers (exact in fp32) that encode the source rank and index.
inline float tag(std::int64_t rank, std::int64_t i) {
  return static_cast<float>((rank * 7919 + i) % 8191);
}

struct Layout {
  std::size_t send = 0, recv = 0;  // elements
  std::size_t per_rank = 0;        // elements per rank (gather/scatter/all-to-all)
  std::int64_t bytes = 0;          // nccl-tests size
};

Layout layout(CollectiveKind c, std::int64_t bytes, int n) {
  const auto total = static_cast<std::size_t>(bytes / 4);
  const auto un = static_cast<std::size_t>(n);
  Layout l;
  switch (c) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::Broadcast:
    case CollectiveKind::SendRecv:
      l.send = l.recv = total;
      l.per_rank = total;
      l.bytes = static_cast<std::int64_t>(total) * 4;
      break;
    case CollectiveKind::AllGather:
      l.per_rank = total / un;
      l.send = l.per_rank;
      l.recv = l.per_rank * un;
      l.bytes = static_cast<std::int64_t>(l.recv) * 4;
      break;
    case CollectiveKind::ReduceScatter:
      l.per_rank = total / un;
      l.send = l.per_rank * un;
      l.recv = l.per_rank;
      l.bytes = static_cast<std::int64_t>(l.send) * 4;
      break;
    case CollectiveKind::AllToAll:
      l.per_rank = total / un;
      l.send = l.recv = l.per_rank * un;
      l.bytes = static_cast<std::int64_t>(l.send) * 4;
      break;
  }
  return l;
}

void run_op(CollectiveKind c, Communicator& comm, const Layout& l, float* send, float* recv) {
  const int r = comm.rank(), n = comm.size();
  switch (c) {
    case CollectiveKind::AllReduce: comm.all_reduce_sum(recv, l.recv); break;
    case CollectiveKind::AllGather: comm.all_gather(send, recv, l.per_rank); break;
    case CollectiveKind::ReduceScatter: comm.reduce_scatter_sum(send, recv, l.per_rank); break;
    case CollectiveKind::AllToAll: comm.all_to_all(send, recv, l.per_rank); break;
    case CollectiveKind::Broadcast: comm.broadcast(recv, l.recv, 0); break;
    case CollectiveKind::SendRecv: comm.send_recv(send, (r + 1) % n, recv, (r - 1 + n) % n, l.recv); break;
  }
}

// Fills the inputs (through `stage`) for the checked run.
void fill_inputs(CollectiveKind c, int r, int n, const Layout& l, std::vector<float>& stage,
                 MemorySpace& mem, float* send, float* recv) {
  (void)n;
  switch (c) {
    case CollectiveKind::AllReduce:
      for (std::size_t i = 0; i < l.recv; ++i) stage[i] = static_cast<float>(r + static_cast<int>(i % 1024));
      mem.upload(recv, stage.data(), l.recv * 4);
      return;
    case CollectiveKind::Broadcast:
      for (std::size_t i = 0; i < l.recv; ++i) stage[i] = r == 0 ? tag(0, static_cast<std::int64_t>(i)) : -1.0f;
      mem.upload(recv, stage.data(), l.recv * 4);
      return;
    case CollectiveKind::ReduceScatter:
      for (std::size_t j = 0; j < l.send; ++j)
        stage[j] = static_cast<float>((static_cast<std::size_t>(r) + j) % 1021);
      break;
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll:
    case CollectiveKind::SendRecv:
      for (std::size_t i = 0; i < l.send; ++i) stage[i] = tag(r, static_cast<std::int64_t>(i));
      break;
  }
  mem.upload(send, stage.data(), l.send * 4);
  std::fill(stage.begin(), stage.begin() + static_cast<std::ptrdiff_t>(l.recv), -1.0f);
  mem.upload(recv, stage.data(), l.recv * 4);
}

std::int64_t count_wrong(CollectiveKind c, int r, int n, const Layout& l, std::vector<float>& stage,
                         MemorySpace& mem, const float* recv) {
  mem.download(stage.data(), recv, l.recv * 4);
  std::int64_t wrong = 0;
  const std::size_t per = l.per_rank;
  for (std::size_t idx = 0; idx < l.recv; ++idx) {
    float expect = 0;
    switch (c) {
      case CollectiveKind::AllReduce:
        expect = static_cast<float>(n * static_cast<int>(idx % 1024) + n * (n - 1) / 2);
        break;
      case CollectiveKind::Broadcast: expect = tag(0, static_cast<std::int64_t>(idx)); break;
      case CollectiveKind::AllGather:
        expect = tag(static_cast<std::int64_t>(idx / per), static_cast<std::int64_t>(idx % per));
        break;
      case CollectiveKind::ReduceScatter: {
        std::size_t sum = 0;
        for (int q = 0; q < n; ++q)
          sum += (static_cast<std::size_t>(q) + static_cast<std::size_t>(r) * per + idx) % 1021;
        expect = static_cast<float>(sum);
        break;
      }
      case CollectiveKind::AllToAll:
        expect = tag(static_cast<std::int64_t>(idx / per),
                     static_cast<std::int64_t>(static_cast<std::size_t>(r) * per + idx % per));
        break;
      case CollectiveKind::SendRecv: expect = tag((r - 1 + n) % n, static_cast<std::int64_t>(idx)); break;
    }
    if (stage[idx] != expect) ++wrong;
  }
  return wrong;
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes) {
  std::vector<std::int64_t> out;
  std::int64_t s = 4;
  while (s < min_bytes) s *= 2;
  for (; s <= max_bytes; s *= 2) out.push_back(s);
  return out;
}

std::vector<CollectiveRecord> run_collective_sweep(Communicator& comm, MemorySpace& memory,
                                                   Communicator& host_sync,
                                                   const CollectiveSweepOptions& options,
                                                   const ProgressFn& progress) {
  const int n = comm.size(), r = comm.rank();
  Communicator* sync = &host_sync;
  const std::vector<std::int64_t> sizes = sweep_sizes(options.min_bytes, options.max_bytes);
  std::vector<CollectiveRecord> out;
  if (sizes.empty()) return out;
  const auto max_elems = static_cast<std::size_t>(sizes.back() / 4);
  Buffer send(memory, max_elems * 4), recv(memory, max_elems * 4);
  std::vector<float> stage(max_elems);

  const std::size_t total = sizes.size() * options.collectives.size();
  std::size_t done = 0;
  for (CollectiveKind c : options.collectives) {
    std::int64_t last_bytes = -1;
    for (std::int64_t size : sizes) {
      if (progress)
        progress(done, total, fmt::format("{} {} B on {} rank{}", to_string(c), size, n, n == 1 ? "" : "s"));
      ++done;
      const Layout l = layout(c, size, n);
      if (l.recv == 0 || l.send == 0 || l.bytes == last_bytes) continue;
      last_bytes = l.bytes;
      CollectiveRecord rec;
      rec.collective = c;
      rec.ranks = n;
      rec.groups = options.groups;
      rec.bytes = l.bytes;
      rec.count = l.bytes / 4;
      rec.trivial = n == 1;
      // Checked run first; every rank learns the group's outcome before timing.
      std::string local_error;
      std::int64_t wrong = 0;
      double first_us = 0;
      try {
        fill_inputs(c, r, n, l, stage, memory, send.floats(), recv.floats());
        memory.synchronize();
        host_sync.barrier();
        double t0 = now_us();
        run_op(c, comm, l, send.floats(), recv.floats());
        memory.synchronize();
        first_us = now_us() - t0;
        wrong = count_wrong(c, r, n, l, stage, memory, recv.floats());
      } catch (const std::exception& e) {
        local_error = e.what();
      }
      double failed = sum_over_ranks(sync, local_error.empty() ? 0.0 : 1.0);
      rec.wrong = static_cast<std::int64_t>(sum_over_ranks(sync, static_cast<double>(wrong)));
      if (failed > 0)
        rec.error = local_error.empty() ? fmt::format("failed on {} other rank(s)", failed) : local_error;
      else if (rec.wrong > 0)
        rec.error = fmt::format("{} wrong elements", rec.wrong);
      if (!rec.error.empty()) {
        out.push_back(rec);
        continue;
      }
      if (c == CollectiveKind::AllReduce) memory.zero(recv.get(), l.recv * 4);  // keep values finite
      double warm_s = max_over_ranks(sync, first_us) * 1e-6, last_s = warm_s;
      for (int w = 1; w < options.timing.warmup && warm_s < options.timing.budget_s / 2; ++w) {
        host_sync.barrier();
        double t0 = now_us();
        run_op(c, comm, l, send.floats(), recv.floats());
        memory.synchronize();
        last_s = max_over_ranks(sync, now_us() - t0) * 1e-6;
        warm_s += last_s;
      }
      const int reps = choose_reps(options.timing, last_s);
      std::vector<double> samples;
      samples.reserve(static_cast<std::size_t>(reps));
      for (int i = 0; i < reps; ++i) {
        host_sync.barrier();
        double t0 = now_us();
        run_op(c, comm, l, send.floats(), recv.floats());
        memory.synchronize();
        samples.push_back(max_over_ranks(sync, now_us() - t0));
      }
      rec.time = summarize_us(samples);
      if (rec.time.median_us > 0) {
        rec.algbw_gbps = static_cast<double>(rec.bytes) / (rec.time.median_us * 1e-6) / 1e9;
        rec.busbw_gbps = rec.algbw_gbps * bus_factor(c, n);
      }
      out.push_back(rec);
    }
  }
  if (progress) progress(total, total, "collectives done");
  return out;
}

}  // namespace strata::kernels::profiler
