#include "runtime/collective_error.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace strata::runtime {

namespace {
constexpr std::size_t kMaxMessage = 2000;
}

void throw_if_any_rank_failed(kernels::Communicator& comm, const LocalError& local) {
  // Which ranks failed: one float per rank (its error kind), summed.
  std::vector<float> kinds(static_cast<std::size_t>(comm.size()), 0.0f);
  kinds[static_cast<std::size_t>(comm.rank())] = static_cast<float>(local.kind);
  comm.all_reduce_sum(kinds.data(), kinds.size());
  int first = -1;
  for (int r = 0; r < comm.size() && first < 0; ++r)
    if (kinds[static_cast<std::size_t>(r)] != 0) first = r;
  if (first < 0) return;
  // The first failing rank's message travels as characters in floats (exact below 2^24).
  std::vector<float> text(kMaxMessage + 1, 0.0f);
  if (comm.rank() == first) {
    const std::size_t n = std::min(kMaxMessage, local.message.size());
    text[0] = static_cast<float>(n);
    for (std::size_t i = 0; i < n; ++i)
      text[i + 1] = static_cast<float>(static_cast<unsigned char>(local.message[i]));
  }
  comm.broadcast(text.data(), text.size(), first);
  std::string message(static_cast<std::size_t>(text[0]), ' ');
  for (std::size_t i = 0; i < message.size(); ++i)
    message[i] = static_cast<char>(static_cast<unsigned char>(text[i + 1]));
  if (comm.size() > 1 && comm.rank() != first) message = fmt::format("(rank {}) {}", first, message);
  switch (static_cast<ErrorKind>(static_cast<int>(kinds[static_cast<std::size_t>(first)]))) {
    case ErrorKind::Input: throw InputError(message);
    case ErrorKind::Device: throw DeviceError(message);
    default: throw InternalError(message);
  }
}

}  // namespace strata::runtime
