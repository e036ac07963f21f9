#!/usr/bin/env bash
# Makes DIR, the venv with PySCF in which the bridge's tests run (tests/python/CMakeLists.txt), from
# the pinned REQUIREMENTS: once per build tree, again only when the requirements change. Needs
# PyPI (PySCF is no Debian package); the rest of the suite runs Debian's /usr/bin/python3.
set -euo pipefail
dir=$1
requirements=$2
if cmp -s "$requirements" "$dir/requirements.txt"; then
  exit 0
fi
rm -rf "$dir"
/usr/bin/python3 -m venv "$dir"
"$dir/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
cp "$requirements" "$dir/requirements.txt"  # last: a venv cut short is made again
