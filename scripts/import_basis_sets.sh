#!/usr/bin/env bash
# Regenerates basis/ from Debian's psi4-data (Psi4's copies of the Basis Set Exchange files):
# the orbital, RI and JK-fit sets dfmp2 supports, elements H–Kr only (Z ≤ 36). Heavier def2
# elements need effective core potentials, which dfmp2 does not support, so they are dropped.
#
#   apt-get install psi4-data && scripts/import_basis_sets.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir=/usr/share/psi4/basis
sets="sto-3g 6-31gs cc-pvdz cc-pvtz aug-cc-pvdz aug-cc-pvtz def2-svp def2-tzvp"
mkdir -p basis
for set in $sets; do
  for file in "$set" "$set-ri" "$set-jkfit"; do
    [ -f "$source_dir/$file.gbs" ] || continue
    # Keep the header and comments; keep each element block ("El 0" … "****") for Z ≤ 36.
    awk '
      BEGIN {
        n = split("H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr", el, " ")
        for (i = 1; i <= n; i++) keep[toupper(el[i])] = 1
        in_block = 0; skip = 0
      }
      /^\*\*\*\*/ { if (!skip) print; in_block = 0; skip = 0; next }
      !in_block && $2 == "0" && NF == 2 && $1 ~ /^[A-Za-z]+$/ {
        in_block = 1; skip = !(toupper($1) in keep)
      }
      /-ECP/ { exit }
      !skip { print }
    ' "$source_dir/$file.gbs" > "basis/$file.gbs"
  done
done
ls basis
