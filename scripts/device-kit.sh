#!/usr/bin/env bash
# Packs the CUDA binaries of a build, and the shared libraries a bare GPU machine lacks,
# into .device-kit/ (ignored through .git/info/exclude) for scripts/device-check.sh.
#
#   scripts/device-kit.sh [BUILD_DIR]      (default: build, relative to the repo root)
#
# .device-kit/kit.tar.xz unpacks to kit/ holding:
#   bin/            every executable of BUILD_DIR whose name contains "cuda", and cli/strata
#   lib/            their non-glibc, non-CUDA libraries (yaml-cpp, fmt, OpenBLAS + gfortran,
#                   Open MPI + hwloc + libevent, Open MPI's libmca_common_*)
#   compat/libstdcxx, compat/libz, compat/libudev
#                   used by device-check.sh only where the machine's own copy is missing or
#                   lacks a symbol version the kit needs (newer system copies are preferred)
#   compat/glibc/   this machine's glibc (loader, libc, libm, ...): used only where the
#                   machine's glibc is older than the kit needs, by starting each program
#                   through the carried loader (never put on LD_LIBRARY_PATH)
#   openmpi/        a relocated Open MPI prefix: MCA components (those whose libraries
#                   travel), help texts, mca-params.conf; env.sh points Open MPI at it and
#                   selects a daemon-less singleton (one process, no mpirun, no orted)
#   env.sh          sourced by device-check.sh; MANIFEST.txt: what is in the kit and the
#                   glibc / GLIBCXX versions each file needs
# The CUDA libraries (libcudart, libcublasLt, libcublas, libnccl, libcuda) are not carried:
# device-check.sh finds the machine's own.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-build}
[[ $build == /* ]] || build=$repo/$build
[[ -d $build ]] || { echo "device-kit: no build folder $build" >&2; exit 2; }
build=$(cd "$build" && pwd)

for tool in ldd objdump xz tar; do
  command -v "$tool" >/dev/null || { echo "device-kit: $tool not found" >&2; exit 2; }
done

out=$repo/.device-kit
stage=$(mktemp -d "${TMPDIR:-/tmp}/device-kit.XXXXXX")
trap 'rm -rf "$stage"' EXIT
kit=$stage/kit
mkdir -p "$kit"/{bin,lib,compat/libstdcxx,compat/libz,compat/libudev,compat/glibc} \
         "$kit"/openmpi/{lib/openmpi3,share/openmpi,etc,bin}

# ---- Binaries. ----
bins=()
while IFS= read -r f; do bins+=("$f"); done < <(
  { find "$build" -path '*/CMakeFiles' -prune -o -type f -perm -u+x -name '*cuda*' -print
    [[ -x $build/cli/strata ]] && echo "$build/cli/strata"; } | sort -u)
[[ ${#bins[@]} -gt 0 ]] || { echo "device-kit: no CUDA binaries under $build" >&2; exit 2; }
for f in "${bins[@]}"; do
  # Only ELF executables (not scripts a build may have marked executable).
  [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
  deps=$(ldd "$f" 2>/dev/null || true)
  [[ $deps == *libcudart* || $(basename "$f") == strata ]] || continue
  cp "$f" "$kit/bin/"
done
[[ -x $kit/bin/strata ]] || echo "device-kit: warning: no cli/strata in $build" >&2

# ---- Library classification. ----
glibc_re='^(linux-vdso\.so|ld-linux-x86-64\.so|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|libresolv\.so|libutil\.so|libmvec\.so)'
cuda_re='^lib(cuda|cudart|cublas|cublasLt|nccl|nvidia-|nvrtc|nvJitLink|cupti|cusparse|cufft|curand|cusolver|cudnn)[.-]'
declare -A compat_of=([libstdc++.so.6]=libstdcxx [libgcc_s.so.1]=libstdcxx [libz.so.1]=libz [libudev.so.1]=libudev)
declare -A have=()
missing=()

# add_deps FILE: copy the libraries FILE needs (as ldd resolves them here) into the kit.
add_deps() {
  local name path
  while read -r name path; do
    [[ $name =~ $glibc_re || $name =~ $cuda_re ]] && continue
    [[ -n ${have[$name]:-} ]] && continue
    if [[ -z $path || $path == "not" ]]; then missing+=("$name (for $(basename "$1"))"); continue; fi
    if [[ -n ${compat_of[$name]:-} ]]; then
      cp -L "$path" "$kit/compat/${compat_of[$name]}/$name"
    else
      cp -L "$path" "$kit/lib/$name"
    fi
    have[$name]=$path
  done < <(ldd "$1" | awk '$2 == "=>" {print $1, $3}')
}
for f in "$kit"/bin/*; do add_deps "$f"; done

# glibc itself, for the fallback loader only.
first_bin=$(find "$kit/bin" -type f | head -1)
libc_path=$(ldd "$first_bin" | awk '$1 == "libc.so.6" {print $3}')
libdir=$(dirname "$(readlink -f "$libc_path")")
for g in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 libmvec.so.1; do
  if [[ -e $libdir/$g ]]; then cp -L "$libdir/$g" "$kit/compat/glibc/$g"
  elif [[ -e /lib64/$g ]]; then cp -L "/lib64/$g" "$kit/compat/glibc/$g"; fi
done

# ---- Open MPI: components, help files, parameters. ----
mpi_path=${have[libmpi.so.40]:-}
if [[ -n $mpi_path ]]; then
  mpi_libdir=$(dirname "$(readlink -f "$mpi_path")")
  # Debian: pkglibdir is $libdir/openmpi/lib/openmpi3; else try $libdir/openmpi.
  pkglib=""
  for d in "$mpi_libdir/openmpi/lib/openmpi3" "$mpi_libdir/openmpi/lib/openmpi" "$mpi_libdir/openmpi"; do
    if compgen -G "$d/mca_*.so" >/dev/null; then pkglib=$d; break; fi
  done
  [[ -n $pkglib ]] || { echo "device-kit: Open MPI components not found near $mpi_libdir" >&2; exit 2; }
  # The libmca_common_* helpers some components link; kept when their own needs travel.
  for c in "$mpi_libdir"/libmca_common_{sm,monitoring,ompio}.so.*; do
    [[ -L $c || -f $c ]] || continue
    base=$(basename "$c")
    [[ $base =~ ^libmca_common_[a-z]+\.so\.[0-9]+$ ]] || continue   # the soname link only
    have[$base]=$c
  done
  dropped=()
  for p in "$pkglib"/*.so; do
    ok=1
    while read -r name; do
      [[ $name =~ $glibc_re || -n ${have[$name]:-} ]] && continue
      ok=0; break
    done < <(ldd "$p" | awk '$2 == "=>" {print $1}')
    if [[ $ok == 1 ]]; then cp -L "$p" "$kit/openmpi/lib/openmpi3/"
    else dropped+=("$(basename "$p" .so)"); fi
  done
  for base in "${!have[@]}"; do
    if [[ $base == libmca_common_* && ! -e $kit/lib/$base ]]; then
      if compgen -G "$kit/openmpi/lib/openmpi3/*.so" >/dev/null &&
         grep -lq "$base" "$kit"/openmpi/lib/openmpi3/*.so; then
        cp -L "${have[$base]}" "$kit/lib/$base"
        add_deps "$kit/lib/$base"
      fi
    fi
  done
  # Help texts and parameters (Debian: /usr/share/openmpi, /etc/openmpi).
  for d in /usr/share/openmpi "$mpi_libdir/../share/openmpi"; do
    if [[ -d $d ]]; then cp "$d"/help-*.txt "$kit/openmpi/share/openmpi/" 2>/dev/null || true; break; fi
  done
  for f in /etc/openmpi/openmpi-mca-params.conf "$mpi_libdir/../etc/openmpi-mca-params.conf"; do
    if [[ -f $f ]]; then cp "$f" "$kit/openmpi/etc/"; break; fi
  done
fi

# ---- Symbol versions each file needs. ----
# needs VERSION_REFS PREFIX: the highest PREFIX_x.y version in a file's "Version
# References" (what ld.so checks when it loads the file).
needs() {
  grep -oE "\\b$2_[0-9][0-9.]*\\b" <<<"$1" | sed "s/^$2_//" | sort -V | tail -1 || true
}
vmax() { printf '%s\n' "$@" | { grep . || true; } | sort -V | tail -1; }
carried=("$kit"/bin/* "$kit"/lib/* "$kit"/compat/libstdcxx/* "$kit"/compat/libz/* "$kit"/compat/libudev/*
         "$kit"/openmpi/lib/openmpi3/*)
glibc_all=() glibc_bins=() glibcxx_all=() cxxabi_all=() gcc_all=()
table=""
declare -A glibc_of=()
for f in "${carried[@]}"; do
  [[ -f $f ]] || continue
  refs=$(objdump -p "$f" 2>/dev/null | sed -n '/^Version References:/,/^$/p' || true)
  g=$(needs "$refs" GLIBC); x=$(needs "$refs" GLIBCXX); a=$(needs "$refs" CXXABI); c=$(needs "$refs" GCC)
  glibc_of[$f]=$g
  glibc_all+=("$g"); glibcxx_all+=("$x"); cxxabi_all+=("$a"); gcc_all+=("$c")
  [[ $f == "$kit"/bin/* ]] && glibc_bins+=("$g")
  [[ $f == "$kit"/openmpi/lib/openmpi3/* ]] && continue   # summarised, not listed
  table+=$(printf '  %-44s GLIBC_%-6s %s%s%s' "${f#"$kit"/}" "${g:--}" \
           "${x:+GLIBCXX_$x }" "${a:+CXXABI_$a }" "${c:+GCC_$c}")$'\n'
done
req_glibc=$(vmax "${glibc_all[@]}")
req_glibc_bins=$(vmax "${glibc_bins[@]}")
req_glibcxx=$(vmax "${glibcxx_all[@]}")
req_cxxabi=$(vmax "${cxxabi_all[@]}")
req_gcc=$(vmax "${gcc_all[@]}")
# What needs the top glibc version (the lever, if it is ever too new for a machine).
top_users=$(for f in "${!glibc_of[@]}"; do
  if [[ ${glibc_of[$f]} == "$req_glibc" ]]; then basename "$f"; fi; done | sort -u | tr '\n' ' ')

# The strata path compiled into tests that run the binary (train_cuda_cli_test).
strata_exe=$(strings -n 8 "$kit"/bin/train_cuda_cli_test 2>/dev/null | grep -m1 -E '^/.*/cli/strata$' || true)

commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$repo" diff --quiet HEAD 2>/dev/null || commit+="+dirty"

cat >"$kit/env.sh" <<EOF
# Sourced (bash) by scripts/device-check.sh. Written by scripts/device-kit.sh.
KIT_ROOT=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
KIT_REQ_GLIBC=$req_glibc          # every carried file (bin, lib, compat except glibc, MCA)
KIT_REQ_GLIBC_BINS=$req_glibc_bins     # the strata binaries alone
KIT_REQ_GLIBCXX=$req_glibcxx
KIT_REQ_CXXABI=$req_cxxabi
KIT_REQ_GCC=$req_gcc
KIT_STRATA_EXE=$strata_exe
KIT_COMMIT=$commit
# Open MPI from the relocated prefix: every install dir named (the env installdirs
# component overrides the compiled-in /usr, /etc/openmpi, ...).
export OPAL_PREFIX="\$KIT_ROOT/openmpi"
export OPAL_EXEC_PREFIX="\$KIT_ROOT/openmpi"
export OPAL_BINDIR="\$KIT_ROOT/openmpi/bin"
export OPAL_LIBDIR="\$KIT_ROOT/lib"
export OPAL_PKGLIBDIR="\$KIT_ROOT/openmpi/lib/openmpi3"
export OPAL_DATAROOTDIR="\$KIT_ROOT/openmpi/share"
export OPAL_DATADIR="\$KIT_ROOT/openmpi/share"
export OPAL_PKGDATADIR="\$KIT_ROOT/openmpi/share/openmpi"
export OPAL_SYSCONFDIR="\$KIT_ROOT/openmpi/etc"
export OMPI_MCA_mca_base_component_path="\$KIT_ROOT/openmpi/lib/openmpi3"
export OMPI_MCA_mca_base_param_files="\$KIT_ROOT/openmpi/etc/openmpi-mca-params.conf"
# One process, no mpirun: a singleton that starts no orted daemon (pmix 'isolated').
export OMPI_MCA_ess_singleton_isolated=1
export OMPI_MCA_btl=self,vader
export OMPI_MCA_pml=ob1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_btl_base_warn_component_unused=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# hwloc: no plugins from the machine (carried hwloc is not built against them).
export HWLOC_PLUGINS_PATH="\$KIT_ROOT/openmpi/hwloc-plugins"
EOF
mkdir -p "$kit/openmpi/hwloc-plugins"

{
  echo "strata device kit: commit $commit, build $build, made $(date -u +%Y-%m-%dT%H:%MZ) on $(sed -n 's/^PRETTY_NAME=//p' /etc/os-release 2>/dev/null | tr -d '"'), $(ldd --version | head -1)"
  echo "needs: glibc >= $req_glibc (binaries alone: $req_glibc_bins; top users: $top_users)"
  echo "       libstdc++ with GLIBCXX_$req_glibcxx and CXXABI_$req_cxxabi (else compat/libstdcxx is used), libgcc_s GCC_$req_gcc"
  echo "       from the machine: libcudart.so.13, libcublasLt.so.13, libnccl.so.2, libcuda.so.1"
  echo "train_cuda_cli_test runs strata from: ${strata_exe:-?}"
  echo "files (symbol versions required):"
  printf '%s' "$table"
  echo "  openmpi/lib/openmpi3: $(find "$kit/openmpi/lib/openmpi3" -type f | wc -l) MCA components"
  if [[ -n ${dropped[*]:-} ]]; then echo "  MCA components left out (their libraries do not travel): ${dropped[*]}"; fi
  if [[ ${#missing[@]} -gt 0 ]]; then echo "  UNRESOLVED here: ${missing[*]}"; fi
  echo "sizes:"; (cd "$kit" && du -sh bin lib compat openmpi | sed 's/^/  /')
} >"$kit/MANIFEST.txt"

# ---- Pack. ----
mkdir -p "$out"
rm -rf "${out:?}"/kit "$out/kit.tar.xz" "$out/MANIFEST.txt"
XZ_OPT=${XZ_OPT:--6 -T0} tar -C "$stage" -cJf "$out/kit.tar.xz" kit
cp "$kit/MANIFEST.txt" "$out/MANIFEST.txt"

exclude=$(git -C "$repo" rev-parse --git-path info/exclude 2>/dev/null || true)
if [[ -n $exclude ]]; then
  [[ $exclude == /* ]] || exclude=$repo/$exclude
  mkdir -p "$(dirname "$exclude")"
  grep -qxF '/.device-kit/' "$exclude" 2>/dev/null || echo '/.device-kit/' >>"$exclude"
fi

cat "$out/MANIFEST.txt"
echo
echo "kit: $out/kit.tar.xz $(du -h "$out/kit.tar.xz" | cut -f1) packed ($(du -sh "$kit" | cut -f1) unpacked); minimum glibc $req_glibc"
[[ ${#missing[@]} -eq 0 ]] || { echo "device-kit: unresolved libraries: ${missing[*]}" >&2; exit 1; }
