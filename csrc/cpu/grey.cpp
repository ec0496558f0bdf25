// CPU launcher of morphaug::grey_box: one van Herk pass per filtered axis, lines in parallel.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "../core/grey.h"
#include "../launch.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr int64_t kLanes = 64;  // neighbouring lines filtered together

// Strided axes: bundles of up to kLanes lines that are neighbours in memory.
// The contiguous last axis: tiles of kLanes lines transposed through buffers,
// so the lane loops of box_lines vectorise in both cases.
template <typename T, bool Max>
void box_pass(const T* in, T* out, const Lines& lines, const BoxAxis& a, T cval) {
  const int64_t n = lines.length;
  const bool contiguous = lines.stride == 1;
  const int64_t per_outer = contiguous ? 1 : (lines.stride + kLanes - 1) / kLanes;
  const int64_t tasks = contiguous ? (lines.count + kLanes - 1) / kLanes
                                   : lines.count / lines.stride * per_outer;
  parallel_over(tasks, n * kLanes, [&](int64_t begin, int64_t end) {
    T carry[kLanes], fill[kLanes];
    const int64_t tile = contiguous ? n * kLanes : 0;
    std::unique_ptr<T[]> tile_in(new T[tile]), tile_out(new T[tile]);  // not vector<bool>
    for (int64_t task = begin; task < end; ++task) {
      if (contiguous) {
        const int64_t first = task * kLanes;
        const int64_t lanes = std::min(kLanes, lines.count - first);
        const T* src = in + first * n;
        for (int64_t l = 0; l < lanes; ++l)
          for (int64_t i = 0; i < n; ++i) tile_in[i * kLanes + l] = src[l * n + i];
        box_lines<T, Max>(tile_in.get(), tile_out.get(), n, kLanes, lanes, a.k, a.left, a.mode,
                          cval, carry, fill);
        T* dst = out + first * n;
        for (int64_t l = 0; l < lanes; ++l)
          for (int64_t i = 0; i < n; ++i) dst[l * n + i] = tile_out[i * kLanes + l];
      } else {
        const int64_t outer = task / per_outer;
        const int64_t first = (task - outer * per_outer) * kLanes;
        const int64_t o = outer * n * lines.stride + first;
        box_lines<T, Max>(in + o, out + o, n, lines.stride, std::min(kLanes, lines.stride - first),
                          a.k, a.left, a.mode, cval, carry, fill);
      }
    }
  });
}

at::Tensor grey_box_cpu(const at::Tensor& input, at::IntArrayRef size, at::IntArrayRef origin,
                        at::IntArrayRef mode, const at::Scalar& cval, bool maximum) {
  const std::vector<BoxAxis> axes = grey_box_axes(input, size, origin, mode);
  const at::Tensor x = input.contiguous();
  at::Tensor out = at::empty_like(x, at::MemoryFormat::Contiguous);
  if (x.numel() == 0) return out;
  if (axes.empty()) return out.copy_(x);
  const at::Tensor scratch = axes.size() > 1 ? at::empty_like(out) : at::Tensor();
  const int passes = static_cast<int>(axes.size());
  AT_DISPATCH_ALL_TYPES_AND3(at::kBool, at::kHalf, at::kBFloat16, x.scalar_type(),
                             "morphaug::grey_box (CPU)", [&] {
    const scalar_t fill = box_fill<scalar_t>(cval);
    const scalar_t* src = x.data_ptr<scalar_t>();
    for (int p = 0; p < passes; ++p) {
      scalar_t* dst = pass_target(p, passes, out, scratch).data_ptr<scalar_t>();
      const Lines lines = lines_along(x, axes[p].axis);
      if (maximum) {
        box_pass<scalar_t, true>(src, dst, lines, axes[p], fill);
      } else {
        box_pass<scalar_t, false>(src, dst, lines, axes[p], fill);
      }
      src = dst;
    }
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(morphaug, CPU, m) { m.impl("grey_box", &grey_box_cpu); }

}  // namespace morphaug
