#!/usr/bin/env bash
# Installs the Debian packages strata needs, only those missing. Runs apt-get as
# root, or through sudo. Extra package names may be passed as arguments.
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config lld
      libyaml-cpp-dev libcli11-dev libfmt-dev libboost-graph-dev libgtest-dev libgmock-dev
      libopenblas-dev libopenmpi-dev openmpi-bin nlohmann-json3-dev libspdlog-dev
      "$@")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "# packages: all present" >&2
  exit 0
fi
echo "# installing: ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "error: need root or sudo to install ${missing[*]}" >&2; exit 2; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
