// Backend names, availability, dtype names and the default ring send_recv.
#include <gtest/gtest.h>

#include <vector>

#include "common/errors.h"
#include "kernels/backend.h"
#include "kernels/gemm_dtype.h"

namespace strata::kernels {
namespace {

TEST(Backend, NamesRoundTrip) {
  EXPECT_EQ(backend_from_string("cpu"), Backend::Cpu);
  EXPECT_EQ(backend_from_string("cuda"), Backend::Cuda);
  EXPECT_STREQ(to_string(Backend::Cpu), "cpu");
  EXPECT_STREQ(to_string(Backend::Cuda), "cuda");
}

TEST(Backend, UnknownNameSaysWhatIsExpected) {
  try {
    backend_from_string("tpu");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "unknown backend 'tpu' (expected cpu or cuda)");
  }
}

TEST(Backend, CpuIsAlwaysAvailableCudaOnlyWhenBuilt) {
  EXPECT_TRUE(backend_available(Backend::Cpu));
#if defined(STRATA_HAVE_CUDA) && STRATA_HAVE_CUDA
  EXPECT_TRUE(backend_available(Backend::Cuda));
#else
  EXPECT_FALSE(backend_available(Backend::Cuda));
#endif
}

TEST(GemmDTypeNames, RoundTripAndRejectUnknown) {
  for (GemmDType d : all_gemm_dtypes()) EXPECT_EQ(gemm_dtype_from_string(to_string(d)), d);
  EXPECT_EQ(element_bytes(GemmDType::Bf16), 2);
  EXPECT_EQ(element_bytes(GemmDType::Tf32), 4);
  EXPECT_THROW(gemm_dtype_from_string("fp8"), InputError);
}

// A one-rank communicator that records calls: the default send_recv must not block
// when it sends to itself.
class LoopbackComm : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(float*, std::size_t) override {}
  void all_gather(const float*, float*, std::size_t) override {}
  void reduce_scatter_sum(const float*, float*, std::size_t) override {}
  void all_to_all(const float*, float*, std::size_t) override {}
  void broadcast(float*, std::size_t, int) override {}
  void send(const float*, std::size_t, int) override { ++sends; }
  void recv(float*, std::size_t, int) override { ++recvs; }
  void barrier() override {}
  int sends = 0, recvs = 0;
};

TEST(Communicator, DefaultSendRecvToSelfCopies) {
  LoopbackComm c;
  std::vector<float> in{1, 2, 3}, out(3, 0);
  c.send_recv(in.data(), 0, out.data(), 0, 3);
  EXPECT_EQ(out, in);
  EXPECT_EQ(c.sends + c.recvs, 0);
}

}  // namespace
}  // namespace strata::kernels
