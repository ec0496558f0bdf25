// CPU launcher of morphaug::ball_morphology: tasks of a few planes of one
// slice (planes along its first axis), each in two per-thread buffers of
// int16 (core/ball.h) small enough for the L2 cache, rows of voxels at a time
// so that the loops vectorise: sweeps on the first axis (over the task's
// planes and r planes on each side) and on the strided axes for taxicab and
// chessboard, windows of 2r + 1 values elsewhere.
#include <ATen/core/Tensor.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "../core/ball.h"
#include "../launch.h"
#include "launchers.h"
#include "clones.h"
#include "fresh.h"
#include "parallel.h"

namespace morphaug {
namespace {

using Value = int16_t;

// Lines a sweep needs side by side to beat 2r + 1 vectorised taps.
constexpr int64_t kSweepLanes = 16;

// Taxicab / chessboard sweeps on a strided axis, `outer` blocks of n rows of `lanes`.
template <int Metric>
MORPHAUG_CPU_CLONES void sweep_axis(const Value* in, Value* out, int64_t outer, int64_t n,
                                    int64_t lanes, int32_t r, bool outside_seeds) {
  for (int64_t o = 0; o < outer; ++o) {
    ball_sweep<Metric, Value>(in + o * n * lanes, out + o * n * lanes, n, lanes, lanes, r,
                              outside_seeds);
  }
}

// A further axis of length n: out = min over |t| <= r of combine(in t steps
// away), for `outer` blocks of n rows of `lanes` values; with `outside_seeds`
// the nearest outside voxel counts as a seed too.
template <int Metric>
MORPHAUG_CPU_CLONES void further_axis(const Value* in, Value* out, int64_t outer, int64_t n,
                                      int64_t lanes, int32_t r, bool outside_seeds) {
  const int64_t block = n * lanes;
  const int64_t reach = r < n - 1 ? r : n - 1;
  for (int64_t o = 0; o < outer; ++o) {
    const Value* __restrict__ src = in + o * block;
    Value* __restrict__ dst = out + o * block;
    for (int64_t p = 0; p < block; ++p) dst[p] = src[p];
    for (int32_t t = 1; t <= reach; ++t) {
      const int64_t shift = t * lanes;
      for (int64_t p = 0; p < block - shift; ++p) {  // the value t steps after
        dst[p] = ball_min<Value>(dst[p], ball_combine<Metric, Value>(src[p + shift], t));
      }
      for (int64_t p = shift; p < block; ++p) {  // the value t steps before
        dst[p] = ball_min<Value>(dst[p], ball_combine<Metric, Value>(src[p - shift], t));
      }
    }
    if (!outside_seeds) continue;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t t = i + 1 < n - i ? i + 1 : n - i;  // steps to the outside
      if (t > r) continue;
      const Value border = ball_combine<Metric, Value>(Value(0), static_cast<int32_t>(t));
      Value* __restrict__ row = dst + i * lanes;
      for (int64_t l = 0; l < lanes; ++l) row[l] = ball_min<Value>(row[l], border);
    }
  }
}

// The byte ranges of radius 1 (cross_planes, box_planes); op is OR, or AND
// when `erode`, and the outside is false.

// out[i] = in[i - 1] op in[i] op in[i + 1] for i in [begin, end) of rows of
// n values (numel in all), a neighbour beyond its row false: over every row
// at once, then each row's two ends again.
MORPHAUG_CLONE_INLINE inline void along_rows(const uint8_t* __restrict__ in, uint8_t* __restrict__ out,
                                             int64_t begin, int64_t end, int64_t numel, int64_t n,
                                             bool erode) {
  const int64_t first = std::max<int64_t>(begin, 1), stop = std::min(end, numel - 1);
  if (erode) {
    for (int64_t i = first; i < stop; ++i) out[i] = in[i - 1] & in[i] & in[i + 1];
  } else {
    for (int64_t i = first; i < stop; ++i) out[i] = in[i - 1] | in[i] | in[i + 1];
  }
  for (int64_t row = begin / n * n; row < end; row += n) {
    const int64_t last = row + n - 1;
    if (row >= begin) out[row] = !erode && (in[row] | (n > 1 && in[row + 1]));
    if (last < end) out[last] = !erode && (in[last] | (n > 1 && in[last - 1]));
  }
}

// out[i] op= in[i - s] op in[i + s] for i in [from, to) of the block [b, b +
// block) of an axis whose values lie s apart, a neighbour outside the block
// false.
MORPHAUG_CLONE_INLINE inline void with_neighbours(const uint8_t* __restrict__ in,
                                                  uint8_t* __restrict__ out, int64_t from, int64_t to,
                                                  int64_t b, int64_t block, int64_t s, bool erode) {
  const int64_t after = std::max(from, b + s), before = std::min(to, b + block - s);
  if (erode) {
    for (int64_t i = after; i < to; ++i) out[i] &= in[i - s];
    for (int64_t i = from; i < before; ++i) out[i] &= in[i + s];
    for (int64_t i = from; i < std::min(to, b + s); ++i) out[i] = 0;
    for (int64_t i = std::max(from, b + block - s); i < to; ++i) out[i] = 0;
  } else {
    for (int64_t i = after; i < to; ++i) out[i] |= in[i - s];
    for (int64_t i = from; i < before; ++i) out[i] |= in[i + s];
  }
}

// Radius 1 in the Euclidean and taxicab metrics (the cross, binary_dilation's
// default): each voxel of planes [lo, hi) of a slice of `size` (as for
// morph_planes) is the op of itself and its face neighbours, read straight
// from the mask, without the int16 buffers.
MORPHAUG_CPU_CLONES void cross_planes(const uint8_t* x, bool* result, const std::vector<int64_t>& size,
                                      int64_t plane, int64_t lo, int64_t hi, bool erode) {
  uint8_t* out = reinterpret_cast<uint8_t*>(result);
  const int rank = static_cast<int>(size.size());
  const int64_t begin = lo * plane, end = hi * plane;
  along_rows(x, out, begin, end, size[0] * plane, size[rank - 1], erode);
  int64_t stride = size[rank - 1];
  for (int k = rank - 2; k >= 0; stride *= size[k--]) {
    const int64_t block = size[k] * stride;
    for (int64_t b = begin / block * block; b < end; b += block) {
      with_neighbours(x, out, std::max(b, begin), std::min(b + block, end), b, block, stride, erode);
    }
  }
}

// Radius 1 in the chessboard metric from two spatial axes (the box of 3 on
// every axis): the op of 3 values along each axis in turn, the first axis
// last, over planes [lo, hi) of a slice and the plane on each side of them
// (filtered along the other axes into p and q, scratch for hi - lo + 2
// planes each), as for cross_planes.
MORPHAUG_CPU_CLONES void box_planes(const uint8_t* x, bool* result, const std::vector<int64_t>& size,
                                    int64_t plane, int64_t lo, int64_t hi, bool erode, uint8_t* p,
                                    uint8_t* q) {
  const int rank = static_cast<int>(size.size());
  const int64_t n = size[0], first = std::max<int64_t>(lo - 1, 0), last = std::min(hi + 1, n);
  const int64_t count = (last - first) * plane;
  along_rows(x + first * plane, p, 0, count, count, size[rank - 1], erode);
  int64_t stride = size[rank - 1];
  for (int k = rank - 2; k >= 1; stride *= size[k--]) {
    const int64_t block = size[k] * stride;
    for (int64_t b = 0; b < count; b += block) {
      std::copy(p + b, p + b + block, q + b);
      with_neighbours(p, q, b, b + block, b, block, stride, erode);
    }
    std::swap(p, q);
  }
  // The first axis, indexed from plane `first`: output planes [lo, hi).
  uint8_t* out = reinterpret_cast<uint8_t*>(result) + first * plane;
  const int64_t from = (lo - first) * plane, to = (hi - first) * plane;
  std::copy(p + from, p + to, out + from);
  with_neighbours(p, out, from, to, -first * plane, n * plane, plane, erode);
}

// Values per task buffer: two int16 buffers of 256 KiB stay in the L2 cache.
// Tasks cover whole planes and at least 4r of them, so that the r planes on
// each side they sweep again on the first axis add at most half its work.
constexpr int64_t kTaskValues = int64_t{1} << 17;

// Dilation (erode = false) or erosion by the ball of radius r >= 1 of planes
// [lo, hi) of a slice of `size` (planes of `plane` voxels; mask and out at
// the slice's start), in `a` (hi - lo + 2r planes) and `b` (hi - lo planes).
// Seeds farther than r planes away do not matter (core/ball.h), so the first
// axis runs over the planes within r of [lo, hi) alone. Where that window stops inside the
// slice, the outside seeds it assumes for erosion are r + 1 planes from the
// task's, beyond the cap.
template <int Metric>
MORPHAUG_CPU_CLONES void morph_planes(const uint8_t* mask, bool* out, const std::vector<int64_t>& size,
                                      int64_t plane, int64_t lo, int64_t hi, int32_t r, bool erode,
                                      Value* a, Value* b) {
  const int rank = static_cast<int>(size.size());
  const int64_t n = size[0];
  const int64_t first = std::max<int64_t>(lo - r, 0), last = std::min<int64_t>(hi + r, n);
  ball_first_axis<Metric, Value>(mask + first * plane, erode ? 0 : 1, erode, a, last - first, plane,
                                 plane, r);
  Value* in = a + (lo - first) * plane;
  Value* free = b;
  const int64_t numel = (hi - lo) * plane;
  int64_t outer = hi - lo;
  for (int k = 1; k < rank; ++k) {
    const int64_t lanes = numel / (outer * size[k]);
    if (Metric != kBallEuclidean && lanes >= kSweepLanes) {
      sweep_axis<Metric>(in, free, outer, size[k], lanes, r, erode);
    } else {
      further_axis<Metric>(in, free, outer, size[k], lanes, r, erode);
    }
    std::swap(in, free);
    outer *= size[k];
  }
  bool* dst = out + lo * plane;
  for (int64_t p = 0; p < numel; ++p) dst[p] = ball_inside<Metric>(in[p], r) != erode;
}

}  // namespace

void ball_morphology_out_cpu(const at::Tensor& mask, const at::Tensor& radius,
                             const at::Tensor& metric, const at::Tensor& erode, at::Tensor& out) {
  check_ball_arguments(mask, radius, metric, erode);
  const int64_t slices = mask.size(0) * mask.size(1);
  const at::Tensor radii = radius.contiguous(), metrics = metric.contiguous(),
                   erodes = erode.contiguous();
  const int64_t* r = radii.data_ptr<int64_t>();
  const int64_t* m = metrics.data_ptr<int64_t>();
  const bool* e = erodes.data_ptr<bool>();
  int64_t widest = 0;  // the largest radius
  for (int64_t s = 0; s < slices; ++s) {
    TORCH_CHECK(r[s] >= 0 && r[s] <= kBallMaxRadius, "morphaug::ball_morphology: radius must be in "
                "[0, ", kBallMaxRadius, "], got ", r[s], " for slice ", s);
    TORCH_CHECK(m[s] >= kBallEuclidean && m[s] <= kBallChessboard,
                "morphaug::ball_morphology: metric codes are 0 (euclidean), 1 (taxicab) and 2 "
                "(chessboard), got ", m[s], " for slice ", s);
    widest = std::max(widest, r[s]);
  }
  const at::Tensor x = mask.contiguous();
  check_out(out, x, "ball_morphology");
  const std::vector<int64_t> size(x.sizes().begin() + 2, x.sizes().end());
  const int64_t numel = slices > 0 ? x.numel() / slices : 0;
  if (numel == 0) return;
  const int64_t n = size[0], plane = numel / n;
  const int64_t planes = std::min(n, std::max((kTaskValues + plane - 1) / plane, 4 * widest));
  const int64_t tasks_per_slice = (n + planes - 1) / planes;
  const uint8_t* source = reinterpret_cast<const uint8_t*>(x.data_ptr<bool>());
  bool* result = out.data_ptr<bool>();
  // A pass an axis, then the output, over each voxel of a task.
  const int64_t task_work = planes * plane * static_cast<int64_t>(size.size() + 1);
  parallel_over(slices * tasks_per_slice, task_work, [&](int64_t begin, int64_t end) {
    std::unique_ptr<Value[]> a(new Value[std::min(n, planes + 2 * widest) * plane]),
        b(new Value[planes * plane]);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t s = task / tasks_per_slice;
      const int64_t lo = (task - s * tasks_per_slice) * planes, hi = std::min(n, lo + planes);
      const uint8_t* in = source + s * numel;
      bool* dst = result + s * numel;
      const int32_t radius_s = static_cast<int32_t>(r[s]);
      if (radius_s == 0) {
        for (int64_t p = lo * plane; p < hi * plane; ++p) dst[p] = in[p] != 0;
      } else if (radius_s == 1 && (m[s] != kBallChessboard || size.size() == 1)) {
        cross_planes(in, dst, size, plane, lo, hi, e[s]);
      } else if (radius_s == 1) {  // the box; a and b hold planes + 2 planes of bytes each
        box_planes(in, dst, size, plane, lo, hi, e[s], reinterpret_cast<uint8_t*>(a.get()),
                   reinterpret_cast<uint8_t*>(b.get()));
      } else if (m[s] == kBallEuclidean) {
        morph_planes<kBallEuclidean>(in, dst, size, plane, lo, hi, radius_s, e[s], a.get(), b.get());
      } else if (m[s] == kBallTaxicab) {
        morph_planes<kBallTaxicab>(in, dst, size, plane, lo, hi, radius_s, e[s], a.get(), b.get());
      } else {
        morph_planes<kBallChessboard>(in, dst, size, plane, lo, hi, radius_s, e[s], a.get(), b.get());
      }
    }
  });
}

at::Tensor ball_morphology_cpu(const at::Tensor& mask, const at::Tensor& radius,
                               const at::Tensor& metric, const at::Tensor& erode) {
  at::Tensor out = fresh_empty(mask.sizes(), mask.options());
  ball_morphology_out_cpu(mask, radius, metric, erode, out);
  return out;
}

}  // namespace morphaug
