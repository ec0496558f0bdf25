// CPU launcher of morphaug::grey_box: the box's axes, the passes that take
// them (grey_box_loops.h says how) and the dispatch on the dtype to those
// passes (grey_passes.h).
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>

#include <vector>

#include "../core/grey.h"
#include "../grey_dispatch.h"
#include "../launch.h"
#include "launchers.h"
#include "fresh.h"
#include "grey_passes.h"

namespace morphaug {
namespace {

// The first entry of `axes` (filtered axes, in order) that the fused pass
// takes: the last spatial axis (of any extent) and up to two before it of
// extent at most kDirect; axes.size() when that leaves no pass worth fusing
// (one axis other than the last: its strided pass reads less).
size_t first_fused(const std::vector<BoxAxis>& axes, int64_t rank) {
  size_t first = axes.size();
  while (first > 0) {
    const BoxAxis& a = axes[first - 1];
    if (a.axis < rank - 3 || (a.axis != rank - 1 && a.k > kDirect)) break;
    --first;
  }
  const size_t fused = axes.size() - first;
  return fused >= 2 || (fused == 1 && axes.back().axis == rank - 1) ? first : axes.size();
}

// The fused pass's view of contiguous x (grey_passes.h) for the axes from `first` on.
FusedBox fused_box(const at::Tensor& x, const std::vector<BoxAxis>& axes, size_t first) {
  const int64_t rank = x.dim() - 2;
  auto extent = [&](int64_t axis) { return axis >= 0 ? x.size(axis + 2) : int64_t{1}; };
  auto box = [&](int64_t axis) {
    for (size_t i = first; i < axes.size(); ++i) {
      if (axes[i].axis == axis) return axes[i];
    }
    return BoxAxis{static_cast<int>(axis), 1, 0, kNearest};
  };
  FusedBox f;
  f.na = extent(rank - 1), f.nb = extent(rank - 2), f.nc = extent(rank - 3);
  f.outer = x.numel() / (f.na * f.nb * f.nc);
  f.a = box(rank - 1), f.b = box(rank - 2), f.c = box(rank - 3);
  return f;
}

}  // namespace

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
  const FusedBox f = fused_box(x, axes, fused);
  const at::Tensor* src = &x;
  for (int p = 0; p < passes; ++p) {
    const at::Tensor& dst = pass_target(p, passes, out, scratch);
    if (p < static_cast<int>(fused)) {
      MORPHAUG_DISPATCH_FLAT_GREY(x.scalar_type(), "morphaug::grey_box (CPU)", [&] {
        const scalar_t fill = box_fill<scalar_t>(cval);
        const Lines lines = lines_along(x, axes[p].axis);
        grey_box_strided_pass(src->data_ptr<scalar_t>(), dst.data_ptr<scalar_t>(), lines, axes[p], fill,
                              maximum);
      });
    } else {
      MORPHAUG_DISPATCH_FLAT_GREY(x.scalar_type(), "morphaug::grey_box (CPU)", [&] {
        const scalar_t fill = box_fill<scalar_t>(cval);
        grey_box_fused_pass(src->data_ptr<scalar_t>(), dst.data_ptr<scalar_t>(), f, fill, maximum);
      });
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

}  // namespace morphaug
