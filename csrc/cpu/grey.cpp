// CPU launcher of morphaug::grey_box.
//
// The trailing axes of the box that span at most kFusedRows rows (the
// product of their extents, the last axis left out) take one pass of the
// row-segment kernel (grey_footprint.cpp): each output row is the extremum
// of those rows' running extrema along the last axis, so the input is read
// and the output written once. Each axis before them takes a pass of its
// own, along which an output row (a row of the later axes) is the extremum
// of whole input rows, in tiles of neighbouring lanes: directly for extents
// up to kDirect, beyond that by van Herk / Gil-Werman (core/grey.h) on a
// packed copy of the tile, which keeps its working set in cache whatever the
// stride between rows.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "../core/grey.h"
#include "../grey_dispatch.h"
#include "../launch.h"
#include "grey_rows.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr int64_t kFusedRows = 16;
constexpr int64_t kDirect = 8;
constexpr int64_t kTileBytes = 4096;        // lanes of a direct tile
constexpr int64_t kPackBytes = 256 << 10;  // the two packed copies of a van Herk tile

// Output rows i in [0, n) of a tile of `lanes` neighbouring lanes (rows
// `stride` apart): the extremum of the k input rows of its window.
template <typename T, bool Max>
MORPHAUG_CPU_CLONES void direct_tile(const T* in, T* out, int64_t n, int64_t stride, int64_t lanes,
                                     const BoxAxis& a, const T* fill, const T** rows) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t d = 0; d < a.k; ++d) {
      const int64_t source = border_index(i + d - a.left, n, a.mode);
      rows[d] = source < 0 ? fill : in + source * stride;
    }
    combine_rows<T, Max, true>(rows, a.k, out + i * stride, lanes);
  }
}

// The same by van Herk / Gil-Werman lines over a packed copy of the tile
// (`packed`: 2 * n * lanes values; carry and fill: scratch of `lanes`).
template <typename T, bool Max>
MORPHAUG_CPU_CLONES void van_herk_tile(const T* in, T* out, int64_t n, int64_t stride, int64_t lanes,
                                       const BoxAxis& a, T cval, T* packed, T* carry, T* fill) {
  T* packed_out = packed + n * lanes;
  for (int64_t i = 0; i < n; ++i) std::copy(in + i * stride, in + i * stride + lanes, packed + i * lanes);
  box_lines<T, Max>(packed, packed_out, n, lanes, lanes, a.k, a.left, a.mode, cval, carry, fill);
  for (int64_t i = 0; i < n; ++i) {
    std::copy(packed_out + i * lanes, packed_out + (i + 1) * lanes, out + i * stride);
  }
}

// One pass along the axis of `lines`, whose rows hold `lines.stride` lanes.
template <typename T, bool Max>
void strided_pass(const T* in, T* out, const Lines& lines, const BoxAxis& a, T cval) {
  const int64_t n = lines.length, stride = lines.stride, bytes = sizeof(T);
  const bool direct = a.k <= kDirect;
  const int64_t width = std::max<int64_t>(
      1, std::min(stride, direct ? kTileBytes / bytes : kPackBytes / (2 * n * bytes)));
  const int64_t per_outer = (stride + width - 1) / width;
  parallel_over(lines.count / stride * per_outer, n * width * (direct ? a.k : 3),
                [&](int64_t begin, int64_t end) {
    std::unique_ptr<T[]> fill(new T[width]), carry(new T[width]);  // not vector<bool>
    std::unique_ptr<T[]> packed(new T[direct ? 0 : 2 * n * width]);
    std::vector<const T*> rows(a.k);
    std::fill(fill.get(), fill.get() + width, cval);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t outer = task / per_outer, first = task % per_outer * width;
      const int64_t lanes = std::min(width, stride - first), o = outer * n * stride + first;
      if (direct) {
        direct_tile<T, Max>(in + o, out + o, n, stride, lanes, a, fill.get(), rows.data());
      } else {
        van_herk_tile<T, Max>(in + o, out + o, n, stride, lanes, a, cval, packed.get(), carry.get(),
                              fill.get());
      }
    }
  });
}

// The first of the trailing axes that take the fused pass.
size_t first_fused(const std::vector<BoxAxis>& axes, int64_t rank) {
  size_t first = axes.size();
  int64_t rows = 1;
  while (first > 0) {
    const BoxAxis& a = axes[first - 1];
    const int64_t extent = a.axis == rank - 1 ? 1 : a.k;
    if (rows * extent > kFusedRows) break;
    rows *= extent;
    --first;
  }
  return first;
}

// The box on axes[first..] as an all-true footprint (extent 1 on the other axes).
FootprintSetup box_footprint(const at::Tensor& x, const std::vector<BoxAxis>& axes, size_t first) {
  const int64_t rank = x.dim() - 2;
  std::vector<int64_t> shape(rank, 1), origin(rank, 0), mode(rank, kNearest);
  int64_t count = 1;
  for (size_t i = first; i < axes.size(); ++i) {
    const BoxAxis& a = axes[i];
    shape[a.axis] = a.k;
    origin[a.axis] = a.left - a.k / 2;
    mode[a.axis] = a.mode;
    count *= a.k;
  }
  return grey_footprint_setup(x, shape, std::vector<int64_t>(count, 1), origin, mode);
}

void grey_box_out_cpu(const at::Tensor& input, at::IntArrayRef size, at::IntArrayRef origin,
                      at::IntArrayRef mode, const at::Scalar& cval, bool maximum,
                      at::Tensor& out) {
  const std::vector<BoxAxis> axes = grey_box_axes(input, size, origin, mode);
  const at::Tensor x = input.contiguous();
  check_out(out, x, "grey_box");
  if (x.numel() == 0) return;
  if (axes.empty()) {
    out.copy_(x);
    return;
  }
  const size_t fused = first_fused(axes, x.dim() - 2);
  const int passes = static_cast<int>(fused) + (fused < axes.size() ? 1 : 0);
  const at::Tensor scratch = passes > 1 ? empty_output(x) : at::Tensor();
  const at::Tensor* src = &x;
  for (int p = 0; p < passes; ++p) {
    const at::Tensor& dst = pass_target(p, passes, out, scratch);
    if (p < static_cast<int>(fused)) {
      MORPHAUG_DISPATCH_FLAT_GREY(x.scalar_type(), "morphaug::grey_box (CPU)", [&] {
        const scalar_t fill = box_fill<scalar_t>(cval);
        const Lines lines = lines_along(x, axes[p].axis);
        if (maximum) {
          strided_pass<scalar_t, true>(src->data_ptr<scalar_t>(), dst.data_ptr<scalar_t>(), lines,
                                       axes[p], fill);
        } else {
          strided_pass<scalar_t, false>(src->data_ptr<scalar_t>(), dst.data_ptr<scalar_t>(), lines,
                                        axes[p], fill);
        }
      });
    } else {
      footprint_filter_cpu(*src, dst, box_footprint(x, axes, fused), cval, maximum, "grey_box");
    }
    src = &dst;
  }
}

at::Tensor grey_box_cpu(const at::Tensor& input, at::IntArrayRef size, at::IntArrayRef origin,
                        at::IntArrayRef mode, const at::Scalar& cval, bool maximum) {
  at::Tensor out = empty_output(input);
  grey_box_out_cpu(input, size, origin, mode, cval, maximum, out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(morphaug, CPU, m) {
  m.impl("grey_box", &grey_box_cpu);
  m.impl("grey_box.out", &grey_box_out_cpu);
}

}  // namespace morphaug
