#!/usr/bin/env bash
# Regenerates basis/ from Debian's psi4-data 1:1.3.2 (Psi4's copies of the Basis Set Exchange
# files): the orbital, RI and JK-fit sets dfmp2 supports.
#
#   apt-get install psi4-data && scripts/import_basis_sets.sh
#
# The def2 sets are kept whole (H–La, Hf–Rn, with their effective core potentials from Rb on):
# Psi4's own files, so that dfmp2 and the Psi4 1.3.2 references use the same numbers. Psi4's
# def2-svp-jkfit stops at Ba; for the elements it lacks Psi4 takes its universal JK set,
# def2-qzvpp-jkfit (Weigend's def2-universal-jkfit), so the same blocks are appended here, and
# that set is shipped whole as def2-universal-jkfit. The other sets keep elements H–Kr (Z ≤ 36).
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir=/usr/share/psi4/basis
mkdir -p basis

# Keeps the header and comments, and each element block ("El 0" … "****") whose element is in
# the list $1; stops at the first ECP block.
keep_elements() {
  awk -v elements="$1" '
    BEGIN {
      n = split(elements, el, " ")
      for (i = 1; i <= n; i++) keep[toupper(el[i])] = 1
      in_block = 0; skip = 0
    }
    /^\*\*\*\*/ { if (!skip) print; in_block = 0; skip = 0; next }
    !in_block && $2 == "0" && NF == 2 && $1 ~ /^[A-Za-z]+$/ {
      in_block = 1; skip = !(toupper($1) in keep)
    }
    /-ECP/ { exit }
    !skip { print }
  ' "$2"
}

# The element symbols of a file's orbital blocks.
elements_of() { awk '$2 == "0" && NF == 2 && $1 ~ /^[A-Za-z]+$/ { print $1 } /-ECP/ { exit }' "$1"; }

h_to_kr="H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr"
for set in sto-3g 6-31gs cc-pvdz cc-pvtz aug-cc-pvdz aug-cc-pvtz; do
  for file in "$set" "$set-ri" "$set-jkfit"; do
    [ -f "$source_dir/$file.gbs" ] || continue
    keep_elements "$h_to_kr" "$source_dir/$file.gbs" > "basis/$file.gbs"
  done
done

universal="$source_dir/def2-qzvpp-jkfit.gbs"
# Its one line of prose between two blocks becomes a comment (Psi4's parser skips it, dfmp2's
# refuses what is not G94).
sed 's/^def2-QZVPP JK-Basis set/! &/' "$universal" > basis/def2-universal-jkfit.gbs
for set in def2-svp def2-tzvp; do
  cp "$source_dir/$set.gbs" "$source_dir/$set-ri.gbs" basis/
  jk="$source_dir/$set-jkfit.gbs"
  missing=$(comm -13 <(elements_of "$jk" | tr a-z A-Z | sort) <(elements_of "$universal" | tr a-z A-Z | sort) | tr '\n' ' ')
  {
    cat "$jk"
    if [ -n "$missing" ]; then
      echo "!"
      echo "! Elements $missing: from Psi4's def2-qzvpp-jkfit (def2-universal-jkfit), as Psi4 takes them"
      keep_elements "$missing" "$universal" | sed -n '/^[A-Za-z][A-Za-z]* *0 *$/,$p'
    fi
  } > "basis/$set-jkfit.gbs"
done
ls basis
