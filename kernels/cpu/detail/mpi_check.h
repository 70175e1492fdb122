// STRATA_MPI_CHECK(call): MPI calls on communicators with MPI_ERRORS_RETURN return
// an error code; this turns it into a DeviceError naming file:line, the call and
// MPI's own error string.
#pragma once
#include <mpi.h>

namespace strata::kernels::detail {
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);
}  // namespace strata::kernels::detail

#define STRATA_MPI_CHECK(call)                                                      \
  do {                                                                              \
    int strata_mpi_rc_ = (call);                                                    \
    if (strata_mpi_rc_ != MPI_SUCCESS)                                              \
      ::strata::kernels::detail::throw_mpi_error(strata_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)
