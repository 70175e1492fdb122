#include "kernels/cpu/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "common/errors.h"
#include "kernels/cpu/detail/mpi_check.h"
#include "kernels/cpu/mpi_placement.h"

namespace strata::kernels {

namespace detail {
void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS) len = 0;
  throw DeviceError(fmt::format("{}:{}: {} failed: {}", file, line, call,
                                len > 0 ? std::string(msg, static_cast<std::size_t>(len))
                                        : fmt::format("MPI error {}", code)));
}
}  // namespace detail

namespace {

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

int to_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw InternalError(fmt::format("{}: {} elements exceed MPI's int count", what, n));
  return static_cast<int>(n);
}

}  // namespace

void mpi_init_once(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) throw DeviceError(fmt::format("MPI_Init_thread failed (code {})", rc));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::atexit(finalize_at_exit);
}

int launcher_rank_or_none() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end == '\0' && r >= 0) return static_cast<int>(r);
  }
  return -1;
}

void mpi_world_barrier_best_effort() {
  try {
    mpi_init_once(nullptr, nullptr);
  } catch (const std::exception&) {
    return;
  }
  int size = 1;
  if (MPI_Comm_size(MPI_COMM_WORLD, &size) != MPI_SUCCESS || size <= 1) return;
  MPI_Barrier(MPI_COMM_WORLD);
}

bool mpi_initialized() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  STRATA_CHECK(mpi_initialized(), "MpiCommunicator needs MPI (call mpi_init_once first)");
  STRATA_CHECK(comm != MPI_COMM_NULL, "MpiCommunicator over MPI_COMM_NULL");
  STRATA_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  STRATA_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  STRATA_MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

MpiCommunicator::~MpiCommunicator() {
  if (comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_NULL && mpi_initialized()) MPI_Comm_free(&comm_);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::from_groups(
    const std::vector<std::vector<int>>& groups) {
  STRATA_CHECK(mpi_initialized(), "from_groups needs MPI");
  int world_rank = 0, world_size = 1;
  STRATA_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  STRATA_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  // Every group is checked the same way on every rank, so all ranks agree on errors.
  std::set<int> seen;
  int color = MPI_UNDEFINED, key = 0;
  for (const auto& g : groups) {
    if (g.empty()) throw InputError("communicator group is empty");
    int lowest = INT_MAX;
    for (int r : g) {
      if (r < 0 || r >= world_size)
        throw InputError(fmt::format("rank {} in a communicator group is outside the world (size {})",
                                     r, world_size));
      if (!seen.insert(r).second)
        throw InputError(fmt::format("rank {} appears in two communicator groups", r));
      lowest = std::min(lowest, r);
    }
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g[i] == world_rank) {
        color = lowest;  // same for every member, distinct across disjoint groups
        key = static_cast<int>(i);
      }
  }
  MPI_Comm comm = MPI_COMM_NULL;
  STRATA_MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm));
  if (comm == MPI_COMM_NULL) return nullptr;  // this rank is in no group
  return std::make_unique<MpiCommunicator>(comm);
}

int MpiCommunicator::rank() const { return rank_; }
int MpiCommunicator::size() const { return size_; }

void MpiCommunicator::all_reduce_sum(float* data, std::size_t count) {
  STRATA_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, data, to_count(count, "all_reduce"), MPI_FLOAT,
                                 MPI_SUM, comm_));
}

void MpiCommunicator::all_gather(const float* send, float* recv, std::size_t count_per_rank) {
  const int c = to_count(count_per_rank, "all_gather");
  const void* s = send == recv + static_cast<std::size_t>(rank_) * count_per_rank ? MPI_IN_PLACE : send;
  STRATA_MPI_CHECK(MPI_Allgather(s, c, MPI_FLOAT, recv, c, MPI_FLOAT, comm_));
}

void MpiCommunicator::reduce_scatter_sum(const float* send, float* recv, std::size_t count_per_rank) {
  STRATA_MPI_CHECK(MPI_Reduce_scatter_block(send, recv, to_count(count_per_rank, "reduce_scatter"),
                                            MPI_FLOAT, MPI_SUM, comm_));
}

void MpiCommunicator::all_to_all(const float* send, float* recv, std::size_t count_per_rank) {
  const int c = to_count(count_per_rank, "all_to_all");
  STRATA_MPI_CHECK(MPI_Alltoall(send, c, MPI_FLOAT, recv, c, MPI_FLOAT, comm_));
}

void MpiCommunicator::all_to_all_v(const float* send, const std::vector<std::size_t>& send_counts,
                                   float* recv, const std::vector<std::size_t>& recv_counts) {
  const auto n = static_cast<std::size_t>(size_);
  STRATA_CHECK(send_counts.size() == n && recv_counts.size() == n,
               "all_to_all_v with {} send / {} receive counts on a group of {}", send_counts.size(),
               recv_counts.size(), n);
  std::vector<int> sc(n), sd(n), rc(n), rd(n);
  std::size_t s_at = 0, r_at = 0;
  for (std::size_t r = 0; r < n; ++r) {
    sc[r] = to_count(send_counts[r], "all_to_all_v");
    rc[r] = to_count(recv_counts[r], "all_to_all_v");
    sd[r] = to_count(s_at, "all_to_all_v");
    rd[r] = to_count(r_at, "all_to_all_v");
    s_at += send_counts[r];
    r_at += recv_counts[r];
  }
  STRATA_MPI_CHECK(MPI_Alltoallv(send, sc.data(), sd.data(), MPI_FLOAT, recv, rc.data(), rd.data(),
                                 MPI_FLOAT, comm_));
}

void MpiCommunicator::broadcast(float* data, std::size_t count, int root) {
  STRATA_MPI_CHECK(MPI_Bcast(data, to_count(count, "broadcast"), MPI_FLOAT, root, comm_));
}

void MpiCommunicator::send(const float* data, std::size_t count, int peer) {
  STRATA_MPI_CHECK(MPI_Send(data, to_count(count, "send"), MPI_FLOAT, peer, 0, comm_));
}

namespace {

class MpiPendingRequest final : public PendingRequest {
 public:
  // `counts` are arrays the operation reads until it completes (MPI forbids freeing them
  // earlier), so the request owns them.
  explicit MpiPendingRequest(MPI_Request r, std::vector<int> counts = {})
      : request_(r), counts_(std::move(counts)) {}
  MPI_Request* request() { return &request_; }
  const int* counts_data() const { return counts_.data(); }
  ~MpiPendingRequest() override {
    // Never block in a destructor (it may run while unwinding from a dead peer).
    if (request_ != MPI_REQUEST_NULL) MPI_Request_free(&request_);
  }
  bool done() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int flag = 0;
    STRATA_MPI_CHECK(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE));
    return flag != 0;
  }
  void wait() override {
    if (request_ != MPI_REQUEST_NULL) STRATA_MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE));
  }

 private:
  MPI_Request request_;
  std::vector<int> counts_;
};

}  // namespace

std::unique_ptr<PendingRequest> MpiCommunicator::isend(const float* data, std::size_t count, int peer) {
  MPI_Request r = MPI_REQUEST_NULL;
  STRATA_MPI_CHECK(MPI_Isend(data, to_count(count, "isend"), MPI_FLOAT, peer, 0, comm_, &r));
  return std::make_unique<MpiPendingRequest>(r);
}

std::unique_ptr<PendingRequest> MpiCommunicator::iall_reduce_sum(float* data, std::size_t count) {
  MPI_Request r = MPI_REQUEST_NULL;
  STRATA_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, data, to_count(count, "iall_reduce"), MPI_FLOAT,
                                  MPI_SUM, comm_, &r));
  return std::make_unique<MpiPendingRequest>(r);
}

std::unique_ptr<PendingRequest> MpiCommunicator::ireduce_scatter_sum(
    const float* send, float* recv, const std::vector<std::size_t>& counts) {
  STRATA_CHECK(counts.size() == static_cast<std::size_t>(size_),
               "reduce-scatter with {} counts on a group of {}", counts.size(), size_);
  std::vector<int> c;
  std::size_t total = 0;
  for (std::size_t n : counts) {
    c.push_back(to_count(n, "ireduce_scatter"));
    total += n;
  }
  to_count(total, "ireduce_scatter");
  auto req = std::make_unique<MpiPendingRequest>(MPI_REQUEST_NULL, std::move(c));
  // recv may be null where this rank receives nothing; MPI wants a valid address.
  float unused = 0;
  STRATA_MPI_CHECK(MPI_Ireduce_scatter(send, recv != nullptr ? recv : &unused, req->counts_data(),
                                       MPI_FLOAT, MPI_SUM, comm_, req->request()));
  return req;
}

std::unique_ptr<PendingRequest> MpiCommunicator::iall_gather(const float* send, float* recv,
                                                             const std::vector<std::size_t>& counts) {
  STRATA_CHECK(counts.size() == static_cast<std::size_t>(size_),
               "all-gather with {} counts on a group of {}", counts.size(), size_);
  // counts, then displacements: MPI reads both until the operation completes
  std::vector<int> c(2 * counts.size());
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    c[r] = to_count(counts[r], "iall_gather");
    c[counts.size() + r] = to_count(total, "iall_gather");
    total += counts[r];
  }
  to_count(total, "iall_gather");
  const int mine = c[static_cast<std::size_t>(rank_)];
  auto req = std::make_unique<MpiPendingRequest>(MPI_REQUEST_NULL, std::move(c));
  float unused = 0;  // MPI wants valid addresses where a count is zero
  STRATA_MPI_CHECK(MPI_Iallgatherv(mine > 0 ? send : &unused, mine, MPI_FLOAT,
                                   total > 0 ? recv : &unused, req->counts_data(),
                                   req->counts_data() + counts.size(), MPI_FLOAT, comm_,
                                   req->request()));
  return req;
}

void MpiCommunicator::recv(float* data, std::size_t count, int peer) {
  STRATA_MPI_CHECK(
      MPI_Recv(data, to_count(count, "recv"), MPI_FLOAT, peer, 0, comm_, MPI_STATUS_IGNORE));
}

void MpiCommunicator::send_recv(const float* send_buf, int dst, float* recv_buf, int src,
                                std::size_t count) {
  const int c = to_count(count, "send_recv");
  STRATA_MPI_CHECK(MPI_Sendrecv(send_buf, c, MPI_FLOAT, dst, 1, recv_buf, c, MPI_FLOAT, src, 1,
                                comm_, MPI_STATUS_IGNORE));
}

void MpiCommunicator::barrier() { STRATA_MPI_CHECK(MPI_Barrier(comm_)); }

MpiPlacement mpi_placement() {
  STRATA_CHECK(mpi_initialized(), "mpi_placement needs MPI");
  MpiPlacement p;
  STRATA_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &p.world_rank));
  STRATA_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &p.world_size));
  MPI_Comm node = MPI_COMM_NULL;
  STRATA_MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, p.world_rank,
                                       MPI_INFO_NULL, &node));
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  STRATA_MPI_CHECK(MPI_Comm_rank(node, &p.local_rank));
  STRATA_MPI_CHECK(MPI_Comm_size(node, &p.local_size));
  MPI_Comm_free(&node);
  int leader = p.local_rank == 0 ? 1 : 0;
  STRATA_MPI_CHECK(MPI_Allreduce(&leader, &p.nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  STRATA_MPI_CHECK(MPI_Get_processor_name(name, &len));
  p.host.assign(name, static_cast<std::size_t>(len));
  return p;
}

std::string mpi_library_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  std::string s(v, static_cast<std::size_t>(len));
  auto nl = s.find_first_of("\r\n");
  if (nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == ' ' || s.back() == ',' || s.back() == '\0')) s.pop_back();
  return s;
}

}  // namespace strata::kernels
