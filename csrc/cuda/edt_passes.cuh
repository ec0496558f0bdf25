// The EDT's passes on CUDA as edt.cu and expand_labels.cu share them: which
// hull each pass computes, how many threads its scratch allows, the hull
// dispatch, and the pass along the last axis through shared memory.
//
// The pass along the last axis (contiguous lines): a block takes kTile
// neighbouring lines and stages them through shared memory kChunk elements
// at a time; the hulls are built from the staged input (the whole envelope,
// without edt_envelope_line_unit's restarts at background voxels, which
// change no choice), and the results go out through the same tile, so that
// global reads and writes take kChunk consecutive elements of a line.
#pragma once

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../core/edt.h"
#include "../launch.h"
#include "grid.cuh"

namespace morphaug {
namespace {

constexpr int kTile = 64;                            // lines of a block of the last pass
constexpr int kChunk = 32;                           // elements of a line staged at a time
constexpr int64_t kScratchBytes = int64_t{1} << 28;  // hull scratch the envelope passes aim at

// How a pass's hull is computed: exact integers (int32 or int64) with unit
// sampling, else double as SciPy.
enum class Hull { kInt32, kInt64, kReal };

// The parabola type of a hull of exact integers.
template <Hull kHull>
using HullInt = std::conditional_t<kHull == Hull::kInt32, int32_t, int64_t>;

inline int64_t hull_entry_bytes(Hull hull) {
  return hull == Hull::kInt32 ? sizeof(EdtParabola<int32_t>)
         : hull == Hull::kInt64 ? sizeof(EdtParabola<int64_t>)
                                : sizeof(double) + sizeof(int32_t);
}

// Per pass d > 0 of a mask's EDT: its hull, its threads (as many as the
// scratch allows: a strided launch before the last axis, last_blocks blocks
// of kTile along it) and the scratch of the largest.
struct EdtPlan {
  Hull hulls[kMaxRank];
  StridedLaunch strided[kMaxRank];
  int64_t last_blocks = 1, scratch_bytes = 0;
};

inline EdtPlan edt_plan(const at::Tensor& mask, const Geometry& g, bool unit) {
  EdtPlan plan;
  for (int d = 1; d < g.rank; ++d) {
    plan.hulls[d] = !unit ? Hull::kReal : edt_unit_int32(g, d) ? Hull::kInt32 : Hull::kInt64;
    const Lines lines = lines_along(mask, d);
    const int64_t line_bytes = lines.length * hull_entry_bytes(plan.hulls[d]);
    const int64_t max_slots = std::max<int64_t>(kThreads, kScratchBytes / line_bytes);
    int64_t slots;
    if (d < g.rank - 1) {
      plan.strided[d] = strided_launch(lines.stride, lines.count / lines.stride, max_slots);
      slots = plan.strided[d].threads;
    } else {
      plan.last_blocks = std::min((lines.count + kTile - 1) / kTile, max_slots / kTile);
      slots = plan.last_blocks * kTile;
    }
    plan.scratch_bytes = std::max(plan.scratch_bytes, slots * line_bytes);
  }
  return plan;
}

// run(std::integral_constant<Hull, hull>{}).
template <typename Run>
void with_hull(Hull hull, Run&& run) {
  switch (hull) {
    case Hull::kInt32: run(std::integral_constant<Hull, Hull::kInt32>{}); break;
    case Hull::kInt64: run(std::integral_constant<Hull, Hull::kInt64>{}); break;
    case Hull::kReal: run(std::integral_constant<Hull, Hull::kReal>{}); break;
  }
}

// The last pass on the `rows` <= kTile lines of n elements at `tile`
// (element k of line q at tile[q * n + k]), thread r of the block taking line
// r: its hull, from the line staged through `values` (every element read
// before emit writes any), then the lower envelope's values (the square
// root with `root`; +inf on a line without a feature) and choices (-1 there)
// put in values[q][k] and chosen[q][k] a chunk at a time, for
// emit(q, c, k) on each element c + k of each line q of the chunk (spread
// over the block's threads, all of which call this). Returns whether line r
// had a feature.
template <typename T, Hull kHull, typename Emit>
__device__ bool edt_last_pass_tile(const T* tile, int64_t n, int rows, T (&values)[kTile][kChunk + 1],
                                   int32_t (&chosen)[kTile][kChunk + 1], void* scratch, double s, bool root,
                                   Emit&& emit) {
  using I = HullInt<kHull>;
  const int r = threadIdx.x;
  const bool mine = r < rows;
  const int64_t slots = gridDim.x * static_cast<int64_t>(kTile);
  const int64_t slot = blockIdx.x * static_cast<int64_t>(kTile) + r;
  EdtParabola<I>* parabolas = static_cast<EdtParabola<I>*>(scratch) + slot;
  double* hull_f = static_cast<double*>(scratch) + slot;
  int32_t* hull_pos = reinterpret_cast<int32_t*>(static_cast<double*>(scratch) + n * slots) + slot;
  // each element (q, k) of a chunk `width` wide, spread over the block
  const auto each_element = [&](int width, auto&& body) {
    for (int e = r; e < kTile * kChunk; e += kTile) {
      const int q = e / kChunk, k = e % kChunk;
      if (q < rows && k < width) body(q, k);
    }
  };
  int64_t top = -1;
  EdtParabola<I> v{0, 0};
  I num = 0, gap = 0;
  for (int64_t c = 0; c < n; c += kChunk) {
    const int width = static_cast<int>(std::min<int64_t>(kChunk, n - c));
    __syncthreads();  // the previous chunk is consumed
    each_element(width, [&](int q, int k) { values[q][k] = tile[q * n + c + k]; });
    __syncthreads();
    if (!mine) continue;
    for (int k = 0; k < width; ++k) {
      const T fw = values[r][k];
      if (fw == static_cast<T>(INFINITY)) continue;  // no feature yet
      if constexpr (kHull == Hull::kReal) {
        edt_hull_push_real(hull_pos, hull_f, slots, top, static_cast<int32_t>(c + k), static_cast<double>(fw), s);
      } else {
        const I x = static_cast<I>(c + k);
        edt_hull_push(parabolas, slots, top, v, num, gap, x, static_cast<I>(fw) + x * x);
      }
    }
  }
  // The results, through the tile: at(i, value, j) of the walk over the hull.
  const bool found = top >= 0;
  const auto write_out = [&](auto&& at) {
    for (int64_t c = 0; c < n; c += kChunk) {
      const int width = static_cast<int>(std::min<int64_t>(kChunk, n - c));
      for (int k = 0; mine && k < width; ++k) at(c + k, values[r][k], chosen[r][k]);
      __syncthreads();
      each_element(width, [&](int q, int k) { emit(q, c, k); });
      __syncthreads();  // the chunk is out before the tile is reused
    }
  };
  if (!found) {
    write_out([](int64_t, T& value, int32_t& j) {
      value = static_cast<T>(INFINITY);
      j = -1;
    });
  } else if constexpr (kHull == Hull::kReal) {
    EdtRealWalk walk(hull_pos, hull_f, slots, top, s);
    write_out([&](int64_t i, T& value, int32_t& j) {
      value = edt_value<T>(walk.at(i), root);
      j = walk.j;
    });
  } else {
    EdtUnitWalk<I> walk(parabolas, slots, top);
    write_out([&](int64_t i, T& value, int32_t& j) {
      const T exact = static_cast<T>(walk.at(static_cast<I>(i)));
      value = root ? square_root(exact) : exact;
      j = walk.p.pos;
    });
  }
  return found;
}

}  // namespace
}  // namespace morphaug
