#!/usr/bin/env bash
# Installs, from Debian's packages, whatever dfmp2 needs to build, test and benchmark and is
# missing. Uses sudo when not run as root.
set -euo pipefail

packages=(
  g++ cmake make ninja-build pkg-config
  clang-14 libclang-rt-14-dev
  libeigen3-dev libhdf5-dev libint2-dev libecpint-dev libopenblas-openmp-dev
  libhwy-dev catch2 libcli11-dev nlohmann-json3-dev libtrexio-dev
  libopenmpi-dev openmpi-bin
  python3 python3-matplotlib python3-venv
  python3-qcengine python3-qcelemental python3-ase
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
