#include "kernels/packed_jk.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>

#include "kernels/compute_engine.hpp"

namespace dfmp2::kernels {
namespace {

// A SYRK wants k ≳ 1000 to run near its peak: that many columns of X^Q per SYRK.
constexpr std::size_t kSyrkColumns = 1024;

// Consecutive shells share a row group while the group stays at most this many functions and its
// rows' significant columns cover at most (1 + kGroupSlack) times the elements the shells'
// own would: taller GEMMs for few more zeros.
constexpr std::size_t kGroupFunctions = 32;
constexpr double kGroupSlack = 0.1;
// The groups replace one SYMM when their significant columns cover at most this share of the
// square: their gathers and smaller GEMMs cost more per element than the SYMM. With the gather's
// prefetch (results/jk_gather_share.md), 20 waters' groups (57.7 %) took 0.88× the SYMM's time in
// fp64 and 0.94× in fp32, 15 waters' (66.8 %) 1.02× and 1.09×.
constexpr double kGatherShare = 0.62;
// When gathering, a batch is this many columns of X (rows of B^Q times the factors' columns):
// each group's GEMM then takes the batch's rows of B^Q at once, and the factors' rows it gathers
// serve them all.
constexpr std::size_t kGatherBatchColumns = 8192;
// ... and at most this many rows of B^Q: factors of few columns (an atom's) would otherwise gather
// thousands of rows of each group at once.
constexpr std::size_t kGatherMostQ = 128;

// A gathered element's place in the stored row; kZero for an element of a block not stored.
using Position = std::uint32_t;
constexpr Position kZero = std::numeric_limits<Position>::max();

struct RowGroup {
  std::size_t start = 0, rows = 0;   // its functions
  std::vector<std::size_t> columns;  // functions of the blocks stored in its rows (either triangle)
};

std::vector<RowGroup> row_groups(const BlockPackedLayout& layout) {
  const std::size_t blocks = layout.row_blocks();
  const auto width = [&](std::size_t b) { return layout.row_block_start(b + 1) - layout.row_block_start(b); };
  // Per row block, the column blocks stored in its rows, ascending (the blocks come by row block).
  std::vector<std::vector<std::size_t>> touched(blocks);
  for (const StoredBlock& block : layout.blocks()) {
    touched[block.row_block].push_back(block.col_block);
    if (!block.diagonal()) touched[block.col_block].push_back(block.row_block);
  }
  const auto functions = [&](const std::vector<std::size_t>& set) {
    std::size_t count = 0;
    for (const std::size_t b : set) count += width(b);
    return count;
  };
  std::vector<RowGroup> groups;
  std::vector<std::vector<std::size_t>> group_blocks;
  std::vector<std::size_t> merged;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t rows = width(b), columns = functions(touched[b]);
    if (!groups.empty()) {
      RowGroup& g = groups.back();
      merged.clear();
      std::set_union(group_blocks.back().begin(), group_blocks.back().end(), touched[b].begin(), touched[b].end(),
                     std::back_inserter(merged));
      const std::size_t merged_columns = functions(merged);
      const double apart = double(g.rows * functions(group_blocks.back()) + rows * columns);
      if (g.rows + rows <= kGroupFunctions && double((g.rows + rows) * merged_columns) <= (1 + kGroupSlack) * apart) {
        g.rows += rows;
        group_blocks.back().swap(merged);
        continue;
      }
    }
    groups.push_back({layout.row_block_start(b), rows, {}});
    group_blocks.push_back(touched[b]);
  }
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (const std::size_t b : group_blocks[g])
      for (std::size_t f = layout.row_block_start(b); f < layout.row_block_start(b + 1); ++f)
        groups[g].columns.push_back(f);
  return groups;
}

// The groups' extent, or one SYMM's (the whole square) when they would not pay.
ProductExtent extent_of(const std::vector<RowGroup>& groups, const BlockPackedLayout& layout) {
  ProductExtent extent;
  for (const RowGroup& g : groups) {
    extent.multiplied += g.rows * g.columns.size();
    extent.most_columns = std::max(extent.most_columns, g.columns.size());
    extent.widest_group = std::max(extent.widest_group, g.rows * g.columns.size());
  }
  const double square = double(layout.n()) * double(layout.n());
  if (double(extent.multiplied) > kGatherShare * square || layout.size() >= kZero)
    return {layout.n() * layout.n(), 0, 0};
  return extent;
}

}  // namespace

// The row groups and, for each, the stored place of every element its rows have in its columns;
// no groups: one SYMM over the whole square.
struct PackedJK::RowGroups {
  std::vector<RowGroup> groups;
  ProductExtent extent;
  std::vector<Position> positions;  // group by group, row by row, column by column

  explicit RowGroups(const BlockPackedLayout& layout) : groups(row_groups(layout)), extent(extent_of(groups, layout)) {
    if (extent.most_columns == 0) {
      groups.clear();
      return;
    }
    positions.reserve(extent.multiplied);
    for (const RowGroup& g : groups)
      for (std::size_t m = g.start; m < g.start + g.rows; ++m)
        for (const std::size_t k : g.columns) {
          const std::size_t place = k <= m ? layout.find(m, k) : layout.find(k, m);
          positions.push_back(place == BlockPackedLayout::npos ? kZero : static_cast<Position>(place));
        }
  }
};

namespace {

bool gathers(const JKShape& shape) { return shape.product.most_columns > 0; }

std::size_t q_per_batch(const JKShape& shape) {
  const std::size_t columns = std::max<std::size_t>(shape.factor_columns(), 1);
  if (!gathers(shape)) return std::max<std::size_t>(1, kSyrkColumns / columns);
  return std::clamp<std::size_t>(kGatherBatchColumns / columns, 1, kGatherMostQ);
}

// Buffer sizes in elements of a build of this shape, one definition for the allocations and for
// workspace_bytes(): J, K per density; the others in the build's precision: B^Q's square (one
// SYMM) or a group's gathered rows of the batch, the factors' rows in a group's columns, X and a
// batch's K.
struct ThreadBuffers {
  std::size_t J, K, square, factor_rows, X, K_batch;
};
ThreadBuffers thread_buffers(const JKShape& shape) {
  const std::size_t n2 = shape.nbf * shape.nbf, nq = q_per_batch(shape);
  if (!gathers(shape)) return {shape.stored, n2, n2, 0, nq * shape.nbf * shape.factor_columns(), n2};
  return {shape.stored, n2, nq * shape.product.widest_group, shape.product.most_columns * shape.factor_columns(),
          nq * shape.nbf * shape.factor_columns(), n2};
}

// What the threads' buffers may grow to over builds of up to `shape`'s factor columns: a budget is
// set before the factors are known (a guess density's may have up to nbf columns), and each buffer
// keeps the most any build asked of it. The batch's rows grow as the columns fall, so no one
// column count gives every buffer's most.
ThreadBuffers most_thread_buffers(const JKShape& shape) {
  ThreadBuffers most{};
  JKShape build = shape;
  build.general_columns = 0;
  for (std::size_t columns = 1; columns <= shape.factor_columns(); ++columns) {
    build.symmetric_columns = columns;
    const ThreadBuffers b = thread_buffers(build);
    most = {std::max(most.J, b.J), std::max(most.K, b.K), std::max(most.square, b.square),
            std::max(most.factor_rows, b.factor_rows), std::max(most.X, b.X), std::max(most.K_batch, b.K_batch)};
  }
  return most;
}

}  // namespace

JKShape PackedJK::shape(std::span<const DensityFactors> densities) const {
  JKShape shape{layout_.n(), layout_.size(), densities.size(), 0, 0, groups_->extent};
  for (const DensityFactors& d : densities) (d.symmetric() ? shape.symmetric_columns : shape.general_columns) += d.columns;
  return shape;
}

// What one build holds beside the threads: the densities, packed and weighted for γ_Q, and their
// factors in the build's precision, transposed (columns × nbf) for the groups.
struct PackedJK::Build {
  Precision precision = Precision::fp64;
  JKShape shape;
  std::vector<DensityFactors> densities;
  std::vector<std::vector<double>> D_weighted;
  std::vector<double> factors_fp64;
  std::vector<float> factors_fp32;
  std::vector<const void*> left, right;  // per density: L_s and R_s (null when symmetric) as used

  template <typename Real>
  const Real* factor(const std::vector<const void*>& which, std::size_t s) const {
    return static_cast<const Real*>(which[s]);
  }
};

// One thread's share: its batches of Q add to its packed J_s and its K_s (the lower triangle for a
// symmetric density). Buffers are raw storage, grown when needed and used as float or double.
struct PackedJK::Thread {
  std::vector<std::vector<double>> J, K;
  std::vector<double> square, factor_rows, X, K_batch;

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
    if (gathers(shape)) return;  // the gathers write every element they multiply
    // Positions outside the stored blocks are never written by unpack_upper: zero in this
    // precision's element size.
    if (precision == Precision::fp32)
      std::fill_n(as<float>(square, sizes.square), sizes.square, 0.0f);
    else
      std::fill_n(as<double>(square, sizes.square), sizes.square, 0.0);
  }

  // γ_Q and its share of each J_s per Q while its row is in cache; then X^Q = B^Q L_s (and
  // B^Q R_s) for the batch, and the batch's X_L X_Rᵀ added to K_s.
  template <typename Real>
  void add_batch(const BlockPackedLayout& layout, const RowGroups& groups, const Build& build, const double* rows,
                 std::size_t nq) {
    const std::size_t nbf = layout.n(), stored = layout.size();
    Real* X_all = as<Real>(X, nq * nbf * build.shape.factor_columns());
    if (groups.groups.empty()) {
      Real* B_square = as<Real>(square, nbf * nbf);
      for (std::size_t q = 0; q < nq; ++q) {
        const double* row = rows + q * stored;
        add_coulomb(build, row, stored);
        unpack_upper(layout, row, B_square);
        for_each_factor(build, [&](std::size_t s, bool right, std::size_t nf) {
          const Real* F = build.factor<Real>(right ? build.right : build.left, s);
          Real* X_q = X_all + x_offset(build, s, nq, right) + q * nbf * nf;
          cpu_engine().symm_upper_left(Real(1), host_matrix<const Real>(B_square, nbf, nbf, nbf),
                                       host_matrix(F, nbf, nf, nbf), Real(0), host_matrix(X_q, nbf, nf, nbf));
        });
      }
    } else {
      for (std::size_t q = 0; q < nq; ++q) add_coulomb(build, rows + q * stored, stored);
      multiply_by_groups<Real>(groups, build, rows, nq, X_all);
    }
    for (std::size_t s = 0; s < build.densities.size(); ++s) {
      const std::size_t k = nq * build.densities[s].columns;
      if (k == 0) continue;  // a spin without electrons (the H atom's β) has K = 0
      const Real* X_left = X_all + x_offset(build, s, nq, false);
      const Real* X_right = build.densities[s].symmetric() ? nullptr : X_all + x_offset(build, s, nq, true);
      add_product(nbf, k, X_left, X_right, K[s], groups.groups.empty() ? Op::none : Op::transpose);
    }
  }

  void add_coulomb(const Build& build, const double* row, std::size_t stored) {
    for (std::size_t s = 0; s < build.densities.size(); ++s)
      axpy(stored, dot(stored, row, build.D_weighted[s].data()), row, J[s].data());
  }

  // visit(s, right, columns) for each factor with columns: L_s, and R_s of a non-symmetric density.
  template <typename Visit>
  static void for_each_factor(const Build& build, Visit visit) {
    for (std::size_t s = 0; s < build.densities.size(); ++s) {
      const std::size_t nf = build.densities[s].columns;
      if (nf == 0) continue;
      visit(s, false, nf);
      if (!build.densities[s].symmetric()) visit(s, true, nf);
    }
  }

  // The group's rows of each of the batch's nq rows B^Q in its columns, into Aᵀ (columns × nq·rows,
  // column q + nq·r for row r of B^Q); zeros for elements of blocks not stored. Row by row of B^Q,
  // then the group's rows: consecutive rows of the group read neighbouring elements of the upper
  // triangle's blocks (the transposed ones) while they are cached. The same elements of the next
  // B^Q are prefetched: scattered over its row, they defeat the hardware's prefetchers, and the
  // gather waited on memory (results/jk_builds_prefetch.md).
  template <typename Real>
  static void gather_group(const RowGroup& g, const Position* place, const double* rows, std::size_t nq,
                           std::size_t stored, Real* A) {
    const std::size_t columns = g.columns.size();
    for (std::size_t q = 0; q < nq; ++q) {
      const double* row = rows + q * stored;
      const double* next = q + 1 < nq ? row + stored : row;
      for (std::size_t r = 0; r < g.rows; ++r) {
        const Position* at = place + r * columns;
        Real* a = A + columns * (q + nq * r);
        for (std::size_t j = 0; j < columns; ++j) {
          if (at[j] == kZero) {
            a[j] = Real(0);
            continue;
          }
          __builtin_prefetch(next + at[j]);
          a[j] = static_cast<Real>(row[at[j]]);
        }
      }
    }
  }

  // X^Q of the batch's nq rows, group by group: the group's rows of each B^Q in its columns are
  // gathered into Aᵀ (columns × nq·rows, column q + nq·r for row r of B^Q), each factor's rows in
  // those columns into Fᵀ (nf × columns; none to gather when the columns are one range), and one
  // GEMM writes Fᵀ Aᵀ (nf × nq·rows): X^Q transposed, the batch's X holding element (i, Q, μ) at
  // i + nf·(Q + nq·μ).
  template <typename Real>
  void multiply_by_groups(const RowGroups& groups, const Build& build, const double* rows, std::size_t nq,
                          Real* X_all) {
    const std::size_t stored = build.shape.stored;
    const ThreadBuffers sizes = thread_buffers(build.shape);
    Real* A = as<Real>(square, sizes.square);
    Real* F_gathered = as<Real>(factor_rows, sizes.factor_rows);
    const Position* place = groups.positions.data();
    for (const RowGroup& g : groups.groups) {
      const std::size_t columns = g.columns.size();
      if (columns == 0) {  // rows without a stored block: X^Q's rows are zero
        for_each_factor(build, [&](std::size_t s, bool right, std::size_t nf) {
          std::fill_n(X_all + x_offset(build, s, nq, right) + nf * nq * g.start, nf * nq * g.rows, Real(0));
        });
        continue;
      }
      gather_group<Real>(g, place, rows, nq, stored, A);
      place += g.rows * columns;
      const bool one_range = g.columns.back() - g.columns.front() + 1 == columns;
      for_each_factor(build, [&](std::size_t s, bool right, std::size_t nf) {
        const Real* F_transposed = build.factor<Real>(right ? build.right : build.left, s);
        const Real* F = F_transposed + nf * g.columns.front();
        if (!one_range) {
          for (std::size_t j = 0; j < columns; ++j)
            std::copy_n(F_transposed + nf * g.columns[j], nf, F_gathered + nf * j);
          F = F_gathered;
        }
        Real* X_g = X_all + x_offset(build, s, nq, right) + nf * nq * g.start;
        cpu_engine().gemm(Op::none, Op::none, Real(1), host_matrix(F, nf, columns, nf),
                          host_matrix<const Real>(A, columns, nq * g.rows, columns), Real(0),
                          host_matrix(X_g, nf, nq * g.rows, nf));
      });
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

  // K += X_L X_Rᵀ (X_R null: the lower triangle of X_L X_Lᵀ), X nbf × k — or k × nbf, transposed,
  // from the groups — summed in double.
  template <typename Real>
  void add_product(std::size_t nbf, std::size_t k, const Real* X_left, const Real* X_right, std::vector<double>& K_s,
                   Op transposed) {
    const Op other = transposed == Op::transpose ? Op::none : Op::transpose;
    const auto X = [&](const Real* data) {
      return transposed == Op::transpose ? host_matrix(data, k, nbf, k) : host_matrix(data, nbf, k, nbf);
    };
    ComputeEngine& engine = cpu_engine();
    if constexpr (std::is_same_v<Real, double>) {
      if (X_right == nullptr)
        engine.syrk_lower(transposed, 1.0, X(X_left), 1.0, host_matrix(K_s.data(), nbf, nbf, nbf));
      else
        engine.gemm(transposed, other, 1.0, X(X_left), X(X_right), 1.0, host_matrix(K_s.data(), nbf, nbf, nbf));
    } else {  // float products, double sum across batches
      float* K_float = as<float>(K_batch, nbf * nbf);
      if (X_right == nullptr) {
        engine.syrk_lower(transposed, 1.0f, X(X_left), 0.0f, host_matrix(K_float, nbf, nbf, nbf));
        for (std::size_t col = 0; col < nbf; ++col)
          for (std::size_t row = col; row < nbf; ++row) K_s[col * nbf + row] += K_float[col * nbf + row];
      } else {
        engine.gemm(transposed, other, 1.0f, X(X_left), X(X_right), 0.0f, host_matrix(K_float, nbf, nbf, nbf));
        for (std::size_t x = 0; x < nbf * nbf; ++x) K_s[x] += K_float[x];
      }
    }
  }
};

PackedJK::PackedJK(const BlockPackedLayout& layout, int threads)
    : layout_(layout),
      groups_(std::make_unique<RowGroups>(layout)),
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
    cpu_engine().gemm(Op::none, Op::transpose, 1.0, host_matrix(d.left, nbf, d.columns, nbf),
                      host_matrix(d.symmetric() ? d.left : d.right, nbf, d.columns, nbf), 0.0,
                      host_matrix(D.data(), nbf, nbf, nbf));
    b.D_weighted.push_back(pack_weighted(layout_, D.data()));
  }
  const bool gathered = !groups_->groups.empty();
  if (precision == Precision::fp64 && !gathered) {
    for (const DensityFactors& d : densities) {
      b.left.push_back(d.left);
      b.right.push_back(d.right);
    }
  } else {  // each factor copied in the build's precision, transposed (columns × nbf) for the groups
    const auto keep = [&]<typename Real>(std::vector<Real>& kept, const double* factor, std::size_t columns) {
      Real* copy = kept.data() + kept.size();
      kept.resize(kept.size() + nbf * columns);  // reserved: the earlier copies stay where they are
      for (std::size_t i = 0; i < columns; ++i)
        for (std::size_t k = 0; k < nbf; ++k)
          copy[gathered ? i + columns * k : k + nbf * i] = static_cast<Real>(factor[k + nbf * i]);
      return static_cast<const void*>(copy);
    };
    const auto keep_all = [&](auto& kept) {
      kept.reserve(nbf * b.shape.factor_columns());
      for (const DensityFactors& d : densities) {
        b.left.push_back(keep(kept, d.left, d.columns));
        b.right.push_back(d.symmetric() ? nullptr : keep(kept, d.right, d.columns));
      }
    };
    if (precision == Precision::fp32)
      keep_all(b.factors_fp32);
    else
      keep_all(b.factors_fp64);
  }
  for (Thread& t : threads_) t.start(b.shape, precision);
}

void PackedJK::add(const double* rows, std::size_t count) {
  const Build& b = *build_;
  // Batches of (nearly) equal size, as many as a multiple of the threads: no thread waits long for
  // another's last batch.
  const std::size_t threads = threads_.size(), most = q_per_batch(b.shape), stored = layout_.size();
  const std::size_t nbatches = ((count + most - 1) / most + threads - 1) / threads * threads;
  const std::size_t per_batch = (count + nbatches - 1) / nbatches;
#pragma omp parallel num_threads(static_cast<int>(threads_.size()))
  {
    Thread& mine = threads_[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 1)
    for (std::size_t batch = 0; batch < nbatches; ++batch) {
      const std::size_t first = batch * per_batch;
      if (first >= count) continue;
      const std::size_t nq = std::min(per_batch, count - first);
      if (b.precision == Precision::fp32)
        mine.add_batch<float>(layout_, *groups_, b, rows + first * stored, nq);
      else
        mine.add_batch<double>(layout_, *groups_, b, rows + first * stored, nq);
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
  const ThreadBuffers b = most_thread_buffers(shape);
  const std::size_t per_thread = sizeof(double) * (shape.densities * (b.J + b.K) + b.square + b.factor_rows + b.X) +
                                 sizeof(float) * b.K_batch;
  // The factors copied: transposed for the groups (in either precision), converted for an fp32 SYMM.
  const std::size_t factors =
      (gathers(shape) ? sizeof(double) : sizeof(float)) * shape.nbf * shape.factor_columns();
  const std::size_t build =
      sizeof(double) * (shape.densities * shape.stored + shape.nbf * shape.nbf) + factors;
  const std::size_t positions = gathers(shape) ? sizeof(Position) * shape.product.multiplied : 0;
  return std::size_t(std::max(threads, 1)) * per_thread + build + positions;
}

ProductExtent PackedJK::product_extent(const BlockPackedLayout& layout) {
  return extent_of(row_groups(layout), layout);
}

double PackedJK::flops(const JKShape& shape, std::size_t naux) {
  const double n2 = double(shape.nbf) * double(shape.nbf);
  const double per_q = 2.0 * double(shape.product.multiplied) * double(shape.factor_columns()) +
                       n2 * double(shape.symmetric_columns) +
                       2.0 * n2 * double(shape.general_columns) + 4.0 * double(shape.stored * shape.densities);
  return per_q * double(naux);
}

}  // namespace dfmp2::kernels
