#include "kernels/packed_jk.hpp"

#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "kernels/blas.hpp"

namespace dfmp2::kernels {
namespace {

// A SYRK wants k ≳ 1000 to run near its peak: that many columns of X^Q per SYRK.
constexpr std::size_t kSyrkColumns = 1024;

// The square is cut into panels of whole row blocks of about this many functions: GEMMs this
// wide run near their rate.
constexpr std::size_t kPanelFunctions = 64;
// The panels replace one SYMM when the panel pairs with a stored block cover at most this share
// of the square (their GEMMs run a little below the SYMM's rate).
constexpr double kPanelShare = 0.7;

}  // namespace

// Panels of row blocks and the panel pairs (p, c), c ≤ p, that hold a stored block: X^Q = B^Q L
// multiplies those only. No pairs: one SYMM over the whole square.
struct PackedJK::Panels {
  std::vector<std::size_t> start;  // first function of each panel, and n after the last
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  std::size_t multiplied = 0;      // elements of the square the products multiply

  explicit Panels(const BlockPackedLayout& layout) {
    const std::size_t n = layout.n();
    std::vector<std::size_t> panel_of(layout.row_blocks());
    start.push_back(0);
    for (std::size_t b = 0; b < layout.row_blocks(); ++b) {
      if (layout.row_block_start(b) - start.back() >= kPanelFunctions) start.push_back(layout.row_block_start(b));
      panel_of[b] = start.size() - 1;
    }
    start.push_back(n);
    const std::size_t panels = start.size() - 1;
    std::vector<bool> stored(panels * panels, false);
    for (const StoredBlock& block : layout.blocks())
      stored[panel_of[block.row_block] * panels + panel_of[block.col_block]] = true;
    for (std::size_t p = 0; p < panels; ++p)
      for (std::size_t c = 0; c <= p; ++c) {
        if (!stored[p * panels + c]) continue;
        pairs.emplace_back(p, c);
        multiplied += (p == c ? 1 : 2) * width(p) * width(c);
      }
    if (double(multiplied) > kPanelShare * double(n) * double(n)) {
      pairs.clear();
      multiplied = n * n;
    }
  }
  std::size_t width(std::size_t p) const { return start[p + 1] - start[p]; }

  // X (n × columns, column-major) = B L for the symmetric B of which `square` holds the upper
  // triangle (column-major, leading dimension n).
  template <typename Real>
  void multiply(std::size_t n, std::size_t columns, const Real* square, const Real* L, Real* X) const {
    if (pairs.empty()) {
      symm_upper_left(n, columns, square, n, L, n, X, n);
      return;
    }
    std::fill_n(X, n * columns, Real(0));
    for (const auto& [p, c] : pairs) {
      const std::size_t p0 = start[p], c0 = start[c];
      const Real* block = square + c0 + p0 * n;  // rows of panel c, columns of panel p: upper triangle
      if (p == c) {
        symm_upper_left(width(p), columns, block, n, L + p0, n, X + p0, n, Real(1), Real(1));
        continue;
      }
      gemm(Transpose::no, Transpose::no, width(c), columns, width(p), Real(1), block, n, L + p0, n, Real(1), X + c0,
           n);
      gemm(Transpose::yes, Transpose::no, width(p), columns, width(c), Real(1), block, n, L + c0, n, Real(1), X + p0,
           n);
    }
  }
};

namespace {

std::size_t q_per_batch(const JKShape& shape) {
  return std::max<std::size_t>(1, kSyrkColumns / std::max<std::size_t>(shape.factor_columns(), 1));
}

// Buffer sizes in elements, one definition for the allocations and for workspace_bytes().
struct ThreadBuffers {
  std::size_t J, K, square, X, K_batch;  // J, K per density; X and K_batch in the build's precision
};
ThreadBuffers thread_buffers(const JKShape& shape) {
  const std::size_t n2 = shape.nbf * shape.nbf;
  return {shape.stored, n2, n2, q_per_batch(shape) * shape.nbf * shape.factor_columns(), n2};
}

}  // namespace

JKShape PackedJK::shape(std::span<const DensityFactors> densities) const {
  JKShape shape{layout_.n(), layout_.size(), densities.size(), 0, 0, panels_->multiplied};
  for (const DensityFactors& d : densities) (d.symmetric() ? shape.symmetric_columns : shape.general_columns) += d.columns;
  return shape;
}

// What one build holds beside the threads: the densities, packed and weighted for γ_Q, and their
// factors in the build's precision.
struct PackedJK::Build {
  Precision precision = Precision::fp64;
  JKShape shape;
  std::vector<DensityFactors> densities;
  std::vector<std::vector<double>> D_weighted;
  std::vector<float> factors_fp32;             // L_s (and R_s) converted, for fp32 builds
  std::vector<const void*> left, right;        // per density, in the build's precision

  template <typename Real>
  const Real* factor(const std::vector<const void*>& which, std::size_t s) const {
    return static_cast<const Real*>(which[s]);
  }
};

// One thread's share: its batches of Q add to its packed J_s and its K_s (the lower triangle for a
// symmetric density). Buffers are raw storage, grown when needed and used as float or double.
struct PackedJK::Thread {
  std::vector<std::vector<double>> J, K;
  std::vector<double> square, X, K_batch;

  template <typename Real>
  Real* as(std::vector<double>& buffer, std::size_t count) {
    if (buffer.size() * sizeof(double) < count * sizeof(Real)) buffer.resize((count * sizeof(Real) + 7) / 8);
    return reinterpret_cast<Real*>(buffer.data());
  }

  void start(const JKShape& shape, Precision precision) {
    const ThreadBuffers sizes = thread_buffers(shape);
    J.resize(shape.densities);
    K.resize(shape.densities);
    for (auto& J_s : J) J_s.assign(sizes.J, 0.0);
    for (auto& K_s : K) K_s.assign(sizes.K, 0.0);
    // Positions outside the stored blocks are never written by unpack_upper: zero in this
    // precision's element size.
    if (precision == Precision::fp32)
      std::fill_n(as<float>(square, sizes.square), sizes.square, 0.0f);
    else
      std::fill_n(as<double>(square, sizes.square), sizes.square, 0.0);
  }

  // Per Q, while its row is in cache: γ_Q and its share of each J_s, then X^Q = B^Q L_s (and
  // B^Q R_s) from the row copied into one triangle of the square, by SYMM or by the panels.
  template <typename Real>
  void add_batch(const BlockPackedLayout& layout, const Panels& panels, const Build& build, const double* rows,
                 std::size_t nq) {
    const std::size_t nbf = layout.n(), stored = layout.size();
    Real* B_square = as<Real>(square, nbf * nbf);
    Real* X_all = as<Real>(X, nq * nbf * build.shape.factor_columns());
    for (std::size_t q = 0; q < nq; ++q) {
      const double* row = rows + q * stored;
      for (std::size_t s = 0; s < build.densities.size(); ++s)
        axpy(stored, dot(stored, row, build.D_weighted[s].data()), row, J[s].data());
      unpack_upper(layout, row, B_square);
      for (std::size_t s = 0; s < build.densities.size(); ++s) {
        const std::size_t nf = build.densities[s].columns;
        Real* X_left = X_all + x_offset(build, s, nq, false) + q * nbf * nf;
        if (nf > 0) panels.multiply(nbf, nf, B_square, build.factor<Real>(build.left, s), X_left);
        if (nf > 0 && !build.densities[s].symmetric())
          panels.multiply(nbf, nf, B_square, build.factor<Real>(build.right, s),
                          X_all + x_offset(build, s, nq, true) + q * nbf * nf);
      }
    }
    for (std::size_t s = 0; s < build.densities.size(); ++s) {
      const std::size_t k = nq * build.densities[s].columns;
      if (k == 0) continue;  // a spin without electrons (the H atom's β) has K = 0
      const Real* X_left = X_all + x_offset(build, s, nq, false);
      const Real* X_right = build.densities[s].symmetric() ? nullptr : X_all + x_offset(build, s, nq, true);
      add_product(nbf, k, X_left, X_right, K[s]);
    }
  }

  // Where density s's X_L (or X_R) of a batch of nq rows begins: each density's columns of every
  // row side by side, so that one SYRK or GEMM per density takes the whole batch.
  static std::size_t x_offset(const Build& build, std::size_t s, std::size_t nq, bool right) {
    const std::size_t nbf = build.shape.nbf;
    std::size_t offset = 0;
    for (std::size_t t = 0; t < s; ++t)
      offset += nq * nbf * build.densities[t].columns * (build.densities[t].symmetric() ? 1 : 2);
    return offset + (right ? nq * nbf * build.densities[s].columns : 0);
  }

  // K += X_L X_Rᵀ (X_R null: the lower triangle of X_L X_Lᵀ), X nbf × k, summed in double.
  template <typename Real>
  void add_product(std::size_t nbf, std::size_t k, const Real* X_left, const Real* X_right, std::vector<double>& K_s) {
    if constexpr (std::is_same_v<Real, double>) {
      if (X_right == nullptr)
        syrk_lower(nbf, k, 1.0, X_left, nbf, 1.0, K_s.data(), nbf);
      else
        gemm(Transpose::no, Transpose::yes, nbf, nbf, k, 1.0, X_left, nbf, X_right, nbf, 1.0, K_s.data(), nbf);
    } else {  // float products, double sum across batches
      float* K_float = as<float>(K_batch, nbf * nbf);
      if (X_right == nullptr) {
        syrk_lower(nbf, k, 1.0f, X_left, nbf, 0.0f, K_float, nbf);
        for (std::size_t col = 0; col < nbf; ++col)
          for (std::size_t row = col; row < nbf; ++row) K_s[col * nbf + row] += K_float[col * nbf + row];
      } else {
        gemm(Transpose::no, Transpose::yes, nbf, nbf, k, 1.0f, X_left, nbf, X_right, nbf, 0.0f, K_float, nbf);
        for (std::size_t x = 0; x < nbf * nbf; ++x) K_s[x] += K_float[x];
      }
    }
  }
};

PackedJK::PackedJK(const BlockPackedLayout& layout, int threads)
    : layout_(layout),
      panels_(std::make_unique<Panels>(layout)),
      threads_(static_cast<std::size_t>(std::max(threads, 1))) {}
PackedJK::~PackedJK() = default;

void PackedJK::begin(std::span<const DensityFactors> densities, Precision precision) {
  build_ = std::make_unique<Build>();
  Build& b = *build_;
  b.precision = precision;
  b.shape = shape(densities);
  b.densities.assign(densities.begin(), densities.end());
  const std::size_t nbf = layout_.n();
  for (const DensityFactors& d : densities) {
    std::vector<double> D(nbf * nbf);  // D = L Rᵀ
    gemm(Transpose::no, Transpose::yes, nbf, nbf, d.columns, 1.0, d.left, nbf, d.symmetric() ? d.left : d.right, nbf,
         0.0, D.data(), nbf);
    b.D_weighted.push_back(pack_weighted(layout_, D.data()));
  }
  if (precision == Precision::fp32) {
    b.factors_fp32.reserve(nbf * b.shape.factor_columns());
    const auto convert = [&](const double* factor, std::size_t columns) {
      const std::size_t start = b.factors_fp32.size();
      b.factors_fp32.insert(b.factors_fp32.end(), factor, factor + nbf * columns);
      return static_cast<const void*>(b.factors_fp32.data() + start);
    };
    for (const DensityFactors& d : densities) {
      b.left.push_back(convert(d.left, d.columns));
      b.right.push_back(d.symmetric() ? nullptr : convert(d.right, d.columns));
    }
  } else {
    for (const DensityFactors& d : densities) {
      b.left.push_back(d.left);
      b.right.push_back(d.right);
    }
  }
  for (Thread& t : threads_) t.start(b.shape, precision);
}

void PackedJK::add(const double* rows, std::size_t count) {
  const Build& b = *build_;
  const std::size_t per_batch = q_per_batch(b.shape), stored = layout_.size();
  const std::size_t nbatches = (count + per_batch - 1) / per_batch;
#pragma omp parallel num_threads(static_cast<int>(threads_.size()))
  {
    Thread& mine = threads_[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 1)
    for (std::size_t batch = 0; batch < nbatches; ++batch) {
      const std::size_t first = batch * per_batch, nq = std::min(per_batch, count - first);
      if (b.precision == Precision::fp32)
        mine.add_batch<float>(layout_, *panels_, b, rows + first * stored, nq);
      else
        mine.add_batch<double>(layout_, *panels_, b, rows + first * stored, nq);
    }
  }
}

void PackedJK::finish(std::span<double* const> J, std::span<double* const> K) {
  const Build& b = *build_;
  const std::size_t nbf = layout_.n(), stored = layout_.size();
  // Sum the threads' shares, each thread a range of the elements.
#pragma omp parallel num_threads(static_cast<int>(threads_.size()))
  for (std::size_t s = 0; s < b.densities.size(); ++s) {
#pragma omp for schedule(static)
    for (std::size_t p = 0; p < stored; ++p)
      for (std::size_t t = 1; t < threads_.size(); ++t) threads_[0].J[s][p] += threads_[t].J[s][p];
#pragma omp for schedule(static)
    for (std::size_t x = 0; x < nbf * nbf; ++x)
      for (std::size_t t = 1; t < threads_.size(); ++t) threads_[0].K[s][x] += threads_[t].K[s][x];
  }
  for (std::size_t s = 0; s < b.densities.size(); ++s) {
    unpack_symmetric(layout_, threads_[0].J[s].data(), J[s]);
    const std::vector<double>& K_sum = threads_[0].K[s];
    if (!b.densities[s].symmetric()) {
      std::copy(K_sum.begin(), K_sum.end(), K[s]);
      continue;
    }
    for (std::size_t col = 0; col < nbf; ++col)
      for (std::size_t row = col; row < nbf; ++row) K[s][col * nbf + row] = K[s][row * nbf + col] = K_sum[col * nbf + row];
  }
  build_.reset();
}

std::size_t PackedJK::workspace_bytes(const JKShape& shape, int threads) {
  const ThreadBuffers b = thread_buffers(shape);
  const std::size_t per_thread =
      sizeof(double) * (shape.densities * (b.J + b.K) + b.square + b.X) + sizeof(float) * b.K_batch;
  const std::size_t build = sizeof(double) * (shape.densities * shape.stored + shape.nbf * shape.nbf) +
                            sizeof(float) * shape.nbf * shape.factor_columns();
  return std::size_t(std::max(threads, 1)) * per_thread + build;
}

double PackedJK::flops(const JKShape& shape, std::size_t naux) {
  const double n2 = double(shape.nbf) * double(shape.nbf);
  const double per_q = 2.0 * double(shape.multiplied) * double(shape.factor_columns()) +
                       n2 * double(shape.symmetric_columns) +
                       2.0 * n2 * double(shape.general_columns) + 4.0 * double(shape.stored * shape.densities);
  return per_q * double(naux);
}

}  // namespace dfmp2::kernels
