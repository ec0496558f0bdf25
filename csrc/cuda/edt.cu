// CUDA launcher of morphaug::edt: one pass per spatial axis, in place in the
// distances (and the indices), one launch a pass across B * C.
//
// Pass 0 (axis 0, no hull) and the envelope passes along further axes but the
// last: a thread per line on a grid of (lanes, outer slices), the lanes of a
// block neighbours in memory, so that each step of a line reads and writes
// neighbouring elements across a warp. The hull of each thread lives in a
// global scratch, entries `slots` apart (coalesced too); the scratch bounds
// the threads of the envelope passes, not those of pass 0.
// The pass along the last axis (contiguous lines): a block takes kTile
// neighbouring lines and stages them through shared memory kChunk elements at
// a time: the hulls are built from the staged input (the whole envelope,
// without edt_envelope_line_unit's restarts at background voxels, which
// change no choice), and the results go out through the same tile, so that
// global reads and writes take kChunk consecutive elements of a line.
// With indices, the envelope's choices are non-decreasing along a line, so
// edt_gather_indices_in_place rewrites the feature coordinates in place.
#include <ATen/Dispatch.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "../core/edt.h"
#include "../launch.h"
#include "grid.cuh"

namespace morphaug {
namespace {

constexpr int kTile = 64;                           // lines of a block of the last pass
constexpr int kChunk = 32;                          // elements of a line staged at a time
constexpr int64_t kScratchBytes = int64_t{1} << 28;  // hull scratch the envelope passes aim at

// How a pass's hull is computed: exact integers (int32 or int64) with unit
// sampling, else double as SciPy.
enum class Hull { kInt32, kInt64, kReal };

int64_t hull_entry_bytes(Hull hull) {
  return hull == Hull::kInt32 ? sizeof(EdtParabola<int32_t>)
         : hull == Hull::kInt64 ? sizeof(EdtParabola<int64_t>)
                                : sizeof(double) + sizeof(int32_t);
}

// Pass 0 along axis 0 (n voxels, lines `inner` lanes wide, `outer` = B * C).
template <typename T>
__global__ void binary_pass_kernel(const bool* mask, int64_t outer, int64_t n, int64_t inner,
                                   Geometry g, T* out, int32_t* idx, bool root) {
  const StridedThread t = strided_thread();
  const int64_t plane = outer * n * inner;
  for (int64_t slice = t.slice; slice < outer; slice += t.slice_step) {
    for (int64_t lane = t.lane; lane < inner; lane += t.lane_step) {
      const int64_t o = slice * n * inner + lane;
      int32_t previous, next;
      const bool found = edt_binary_lines(mask + o, n, inner, 1, g.sampling[0], out + o,
                                          idx ? idx + o : nullptr, out + o, inner, &previous,
                                          &next, root);
      if (g.rank == 1 && !found) {
        edt_no_background_line(g, o, out + o, idx ? idx + o : nullptr, plane, root);
      }
    }
  }
}

// Pass d > 0 along an axis before the last one (n voxels, lines `inner`
// lanes wide, `outer` slices), in place in f.
template <typename T, Hull kHull>
__global__ void envelope_pass_kernel(int d, int64_t outer, int64_t n, int64_t inner, Geometry g,
                                     T* f, int32_t* idx, void* scratch) {
  const StridedThread t = strided_thread();
  const int64_t slots = t.lane_step * t.slice_step;  // the launch's threads
  const int64_t plane = outer * n * inner;
  for (int64_t slice = t.slice; slice < outer; slice += t.slice_step) {
    for (int64_t lane = t.lane; lane < inner; lane += t.lane_step) {
      const int64_t o = slice * n * inner + lane;
      int32_t* arg = idx ? idx + d * plane + o : nullptr;
      if constexpr (kHull == Hull::kReal) {
        double* hull_f = static_cast<double*>(scratch) + t.slot;
        int32_t* hull_pos =
            reinterpret_cast<int32_t*>(static_cast<double*>(scratch) + n * slots) + t.slot;
        edt_envelope_line(f + o, inner, n, g.sampling[d], f + o, inner, arg, hull_pos, hull_f,
                          slots, false);
      } else {
        using I = std::conditional_t<kHull == Hull::kInt32, int32_t, int64_t>;
        EdtParabola<I>* hull = static_cast<EdtParabola<I>*>(scratch) + t.slot;
        edt_envelope_line_unit(f + o, inner, n, f + o, inner, arg, hull, slots, false);
      }
      if (idx) edt_gather_indices_in_place(idx + o, plane, inner, d, n);
    }
  }
}

// The pass along the last axis d > 0 (lines of n contiguous voxels), in
// place in f: thread r of a block owns line first + r of its tile.
template <typename T, Hull kHull>
__global__ void __launch_bounds__(kTile)
    last_pass_kernel(int d, int64_t lines, int64_t n, Geometry g, T* f, int32_t* idx,
                     void* scratch, bool root) {
  using I = std::conditional_t<kHull == Hull::kInt32, int32_t, int64_t>;
  __shared__ T values[kTile][kChunk + 1];
  __shared__ int32_t chosen[kTile][kChunk + 1];
  const int r = threadIdx.x;
  const int64_t slots = gridDim.x * static_cast<int64_t>(kTile);
  const int64_t slot = blockIdx.x * static_cast<int64_t>(kTile) + r;
  const int64_t plane = lines * n;
  const double s = g.sampling[d];
  EdtParabola<I>* parabolas = static_cast<EdtParabola<I>*>(scratch) + slot;
  double* hull_f = static_cast<double*>(scratch) + slot;
  int32_t* hull_pos = reinterpret_cast<int32_t*>(static_cast<double*>(scratch) + n * slots) + slot;
  for (int64_t first = blockIdx.x * static_cast<int64_t>(kTile); first < lines; first += slots) {
    const int rows = static_cast<int>(std::min<int64_t>(kTile, lines - first));
    const bool mine = r < rows;
    T* tile = f + first * n;  // element k of row q at tile[q * n + k]
    int32_t* tile_arg = idx ? idx + d * plane + first * n : nullptr;
    // The hull, from the line staged chunk by chunk (every f read before any is written).
    int64_t top = -1;
    EdtParabola<I> v{0, 0};
    I num = 0, gap = 0;
    for (int64_t c = 0; c < n; c += kChunk) {
      const int width = static_cast<int>(std::min<int64_t>(kChunk, n - c));
      __syncthreads();  // the previous chunk is consumed
      for (int e = r; e < kTile * kChunk; e += kTile) {
        const int q = e / kChunk, k = e % kChunk;
        if (q < rows && k < width) values[q][k] = tile[q * n + c + k];
      }
      __syncthreads();
      if (!mine) continue;
      for (int k = 0; k < width; ++k) {
        const T fw = values[r][k];
        if (fw == static_cast<T>(INFINITY)) continue;  // no background yet
        if constexpr (kHull == Hull::kReal) {
          edt_hull_push_real(hull_pos, hull_f, slots, top, static_cast<int32_t>(c + k),
                             static_cast<double>(fw), s);
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
        for (int e = r; e < kTile * kChunk; e += kTile) {
          const int q = e / kChunk, k = e % kChunk;
          if (q < rows && k < width) {
            tile[q * n + c + k] = values[q][k];
            if (tile_arg) tile_arg[q * n + c + k] = chosen[q][k];
          }
        }
        __syncthreads();  // the chunk is out before the tile is reused
      }
    };
    if (!found) {  // +inf and -1; edt_no_background_line below
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
    if (!mine) continue;
    const int64_t o = (first + r) * n;
    if (idx) edt_gather_indices_in_place(idx + o, plane, 1, d, n);
    if (!found) edt_no_background_line(g, o, f + o, idx ? idx + o : nullptr, plane, root);
  }
}

template <typename T>
void edt_passes(const at::Tensor& mask, const EdtSetup& setup, bool squared) {
  const Geometry& g = setup.geometry;
  const int rank = g.rank;
  T* f = setup.distances.data_ptr<T>();
  int32_t* idx = setup.indices.numel() > 0 ? setup.indices.data_ptr<int32_t>() : nullptr;
  const cudaStream_t stream = cuda::current_stream();
  // Per pass: its hull, its threads (as many as the scratch allows) and their scratch.
  Hull hulls[kMaxRank];
  StridedLaunch strided[kMaxRank];
  int64_t last_blocks = 1, scratch_bytes = 0;
  for (int d = 1; d < rank; ++d) {
    hulls[d] = !setup.unit ? Hull::kReal : edt_unit_int32(g, d) ? Hull::kInt32 : Hull::kInt64;
    const Lines lines = lines_along(mask, d);
    const int64_t line_bytes = lines.length * hull_entry_bytes(hulls[d]);
    const int64_t max_slots = std::max<int64_t>(kThreads, kScratchBytes / line_bytes);
    int64_t slots;
    if (d < rank - 1) {
      strided[d] = strided_launch(lines.stride, lines.count / lines.stride, max_slots);
      slots = strided[d].threads;
    } else {
      last_blocks = std::min((lines.count + kTile - 1) / kTile, max_slots / kTile);
      slots = last_blocks * kTile;
    }
    scratch_bytes = std::max(scratch_bytes, slots * line_bytes);
  }
  const at::Tensor scratch = at::empty({scratch_bytes}, mask.options().dtype(at::kByte));
  for (int d = 0; d < rank; ++d) {
    const Lines lines = lines_along(mask, d);
    const int64_t outer = lines.count / lines.stride;
    if (d == 0) {
      const StridedLaunch launch = strided_launch(lines.stride, outer, INT64_MAX);
      cuda::launch<binary_pass_kernel<T>>(launch.grid, launch.block, stream, mask.data_ptr<bool>(),
          outer, lines.length, lines.stride, g, f, idx, rank == 1 && !squared);
      continue;
    }
    const auto run = [&](auto hull) {
      constexpr Hull kHull = decltype(hull)::value;
      if (d < rank - 1) {
        cuda::launch<envelope_pass_kernel<T, kHull>>(strided[d].grid, strided[d].block, stream,
            d, outer, lines.length, lines.stride, g, f, idx, scratch.data_ptr());
      } else {
        cuda::launch<last_pass_kernel<T, kHull>>(static_cast<unsigned>(last_blocks), kTile, stream,
            d, lines.count, lines.length, g, f, idx, scratch.data_ptr(), !squared);
      }
    };
    switch (hulls[d]) {
      case Hull::kInt32: run(std::integral_constant<Hull, Hull::kInt32>{}); break;
      case Hull::kInt64: run(std::integral_constant<Hull, Hull::kInt64>{}); break;
      case Hull::kReal: run(std::integral_constant<Hull, Hull::kReal>{}); break;
    }
  }
}

void run_edt(const at::Tensor& mask, const EdtSetup& setup, bool squared) {
  const at::Tensor contiguous = mask.contiguous();
  AT_DISPATCH_FLOATING_TYPES(setup.distances.scalar_type(), "morphaug::edt (CUDA)",
                             [&] { edt_passes<scalar_t>(contiguous, setup, squared); });
}

std::tuple<at::Tensor, at::Tensor> edt_cuda(const at::Tensor& mask,
                                            std::optional<at::ArrayRef<double>> sampling,
                                            bool return_indices, at::ScalarType dtype, bool squared) {
  const cuda::DeviceGuard guard(mask.device());
  const EdtSetup setup = edt_setup(mask, sampling, return_indices, dtype);
  if (mask.numel() > 0) run_edt(mask, setup, squared);
  return {setup.distances, setup.indices};
}

void edt_out_cuda(const at::Tensor& mask, std::optional<at::ArrayRef<double>> sampling,
                  bool squared, at::Tensor& out) {
  const cuda::DeviceGuard guard(mask.device());
  const EdtSetup setup = edt_setup(mask, sampling, false, out.scalar_type(), &out);
  if (mask.numel() > 0) run_edt(mask, setup, squared);
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) {
  m.impl("edt", &edt_cuda);
  m.impl("edt.out", &edt_out_cuda);
}

}  // namespace morphaug
