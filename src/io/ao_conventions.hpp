// How other programs order and normalise the functions of a shell, mapped onto libint2's:
// spherical functions in the order m = −l … +l, Cartesian ones as x^a y^b z^c for a = l … 0,
// b = l − a … 0 (xx, xy, xz, yy, yz, zz), each Cartesian component carrying the normalisation
// constant of x^l (so xy has norm² 1/3), real solid harmonics without the Condon–Shortley phase
// (d+1 = √3 xz, f+3 = √(5/8)(xxx − 3xyy), the same functions Psi4, Molden and TREXIO use).
// p shells are Cartesian x, y, z in libint2, as place_on builds them.
#pragma once

#include <array>
#include <vector>

#include <Eigen/Core>

namespace dfmp2 {

// Function k of a shell in a file is factor[k] × the shell's libint2 function index[k], so an
// orbital's coefficients map as C_libint2[index[k]] = factor[k] · C_file[k].
struct ShellMap {
  std::vector<int> index;
  std::vector<double> factor;
};

// (lx, ly, lz) of the Cartesian components in libint2's order.
std::vector<std::array<int, 3>> cartesian_components(int l);
int cartesian_index(const std::array<int, 3>& powers);  // position in that order
// libint2's x^lx y^ly z^lz over a unit-normalised one: √((2lx−1)!!(2ly−1)!!(2lz−1)!!/(2l−1)!!).
double cartesian_norm(const std::array<int, 3>& powers);

// Real solid harmonics in the order m = 0, +1, −1, +2, −2, … (Molden's and TREXIO's), as
// libint2 indices; for l = 1 the Cartesian ones (z, x, y).
std::vector<int> plus_minus_order(int l);

// How a file's Cartesian functions are normalised: each to one (Molden's and GAMESS's
// convention), or each like x^l (libint2's, and Psi4 1.3's Molden files).
enum class CartesianNorm { unit, like_xl };

// A file's functions, shell after shell, each a multiple of one libint2 function of the basis:
// C_libint2[row[k]] = factor[k] · C_file[k].
struct FunctionMap {
  std::vector<Eigen::Index> row;
  std::vector<double> factor;
  // The next shell of the file, whose libint2 functions start at `first`.
  void append(Eigen::Index first, const ShellMap& shell);
};

// C (file functions × orbitals) into libint2's order and normalisation; and back.
Eigen::MatrixXd to_libint2(const Eigen::MatrixXd& C_file, const FunctionMap& map);
Eigen::MatrixXd from_libint2(const Eigen::MatrixXd& C, const FunctionMap& map);

// Normalisation constant of the primitive x^l e^(−α r²).
double primitive_norm(int l, double alpha);
// ‖x^l Σ_k c_k e^(−α_k r²)‖: the norm a radial contraction gives the x^l component.
double xl_norm(int l, const std::vector<double>& alpha, const std::vector<double>& c);

// max |Cᵀ S C − 1|: how far orbitals are from orthonormal in the overlap S.
double orthonormality_error(const Eigen::MatrixXd& C, const Eigen::MatrixXd& S);

}  // namespace dfmp2
