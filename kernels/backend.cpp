#include "kernels/backend.h"

#include <algorithm>

#include "common/enum_names.h"
#include "common/errors.h"

namespace strata::kernels {

constexpr EnumName<Backend> kBackendNames[] = {{Backend::Cpu, "cpu"}, {Backend::Cuda, "cuda"}};

const char* to_string(Backend b) { return enum_name(b, kBackendNames); }

Backend backend_from_string(const std::string& s) {
  if (const auto b = enum_from_name(s, kBackendNames)) return *b;
  input_error("unknown backend '{}' (expected {})", s, enum_names(kBackendNames, " or "));
}

bool backend_available(Backend b) {
  switch (b) {
    case Backend::Cpu: return true;
    case Backend::Cuda:
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
      return true;
#else
      return false;
#endif
  }
  return false;
}

namespace {
struct CompletedRequest final : PendingRequest {
  bool done() override { return true; }
  void wait() override {}
};

// A rank's part of a buffer that holds every rank's `counts` in rank order: where the part
// starts, and the buffer's size.
struct RankPart {
  std::size_t offset = 0, total = 0;
};

RankPart rank_part(const std::vector<std::size_t>& counts, int rank) {
  RankPart p;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (static_cast<int>(r) < rank) p.offset += counts[r];
    p.total += counts[r];
  }
  return p;
}
}  // namespace

std::unique_ptr<PendingRequest> completed_request() { return std::make_unique<CompletedRequest>(); }

std::unique_ptr<PendingRequest> Communicator::isend(const float* data, std::size_t count, int peer) {
  send(data, count, peer);
  return completed_request();
}

void Communicator::all_to_all_v(const float* send, const std::vector<std::size_t>& send_counts,
                                float* recv, const std::vector<std::size_t>& recv_counts) {
  const auto n = static_cast<std::size_t>(size());
  STRATA_CHECK(send_counts.size() == n && recv_counts.size() == n,
               "all_to_all_v with {} send / {} receive counts on a group of {}", send_counts.size(),
               recv_counts.size(), n);
  std::vector<std::unique_ptr<PendingRequest>> sends;
  std::size_t at = 0;
  for (std::size_t r = 0; r < n; ++r) {
    if (static_cast<int>(r) == rank()) {
      std::size_t to = 0;
      for (std::size_t q = 0; q < r; ++q) to += recv_counts[q];
      STRATA_CHECK(send_counts[r] == recv_counts[r], "all_to_all_v: {} floats to self, {} expected",
                   send_counts[r], recv_counts[r]);
      std::copy_n(send + at, send_counts[r], recv + to);
    } else if (send_counts[r] > 0) {
      sends.push_back(isend(send + at, send_counts[r], static_cast<int>(r)));
    }
    at += send_counts[r];
  }
  at = 0;
  for (std::size_t r = 0; r < n; ++r) {
    if (static_cast<int>(r) != rank() && recv_counts[r] > 0)
      this->recv(recv + at, recv_counts[r], static_cast<int>(r));
    at += recv_counts[r];
  }
  for (auto& s : sends) s->wait();
}

std::unique_ptr<PendingRequest> Communicator::iall_reduce_sum(float* data, std::size_t count) {
  all_reduce_sum(data, count);
  return completed_request();
}

std::unique_ptr<PendingRequest> Communicator::ireduce_scatter_sum(
    const float* send, float* recv, const std::vector<std::size_t>& counts) {
  STRATA_CHECK(counts.size() == static_cast<std::size_t>(size()),
               "reduce-scatter with {} counts on a group of {}", counts.size(), size());
  const auto [offset, total] = rank_part(counts, rank());
  std::vector<float> sum(send, send + total);
  all_reduce_sum(sum.data(), total);
  const auto mine = counts[static_cast<std::size_t>(rank())];
  std::copy_n(sum.begin() + static_cast<std::ptrdiff_t>(offset), mine, recv);
  return completed_request();
}

std::unique_ptr<PendingRequest> Communicator::iall_gather(const float* send, float* recv,
                                                          const std::vector<std::size_t>& counts) {
  STRATA_CHECK(counts.size() == static_cast<std::size_t>(size()),
               "all-gather with {} counts on a group of {}", counts.size(), size());
  const auto [offset, total] = rank_part(counts, rank());
  std::fill(recv, recv + total, 0.0f);
  std::copy_n(send, counts[static_cast<std::size_t>(rank())], recv + offset);
  all_reduce_sum(recv, total);  // every value has one non-zero contributor
  return completed_request();
}

void Communicator::send_recv(const float* send_buf, int dst, float* recv_buf, int src,
                             std::size_t count) {
  if (dst == rank() && src == rank()) {  // one-rank ring: a local copy
    std::copy(send_buf, send_buf + count, recv_buf);
    return;
  }
  // Even ranks send first, odd ranks receive first: every blocking send meets a
  // posted receive, so a ring shift completes for any group size.
  if (rank() % 2 == 0) {
    send(send_buf, count, dst);
    recv(recv_buf, count, src);
  } else {
    recv(recv_buf, count, src);
    send(send_buf, count, dst);
  }
}

}  // namespace strata::kernels
