# Sourced by scripts/test.sh and scripts/test-hardening.sh after they cd to the repository:
# the `## ` phase timer, the environment every test phase runs in (mpirun as root in a
# container, ranks oversubscribed on few cores, one BLAS thread per rank) and $jobs for the
# builds.
phase() { echo "## $1"; phase_start=$SECONDS; }
phase_done() { echo "## $1: done in $((SECONDS - phase_start)) s"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OPENBLAS_NUM_THREADS=1
jobs=$(nproc)
