// CPU launcher of morphaug::grey_footprint: the footprint's runs
// (grey_footprint_setup, launch.h) and the dispatch on the dtype to the
// filter (grey_passes.h; grey_footprint_loops.h says how it runs).
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>

#include "../grey_dispatch.h"
#include "../launch.h"
#include "launchers.h"
#include "fresh.h"
#include "grey_passes.h"

namespace morphaug {
namespace {

}  // namespace

void grey_footprint_out_cpu(const at::Tensor& input, at::IntArrayRef shape,
                            at::IntArrayRef footprint, at::IntArrayRef origin,
                            at::IntArrayRef mode, const at::Scalar& cval, bool maximum,
                            at::Tensor& out) {
  const FootprintSetup f = grey_footprint_setup(input, shape, footprint, origin, mode);
  const at::Tensor x = input.contiguous();
  check_out(out, x, "grey_footprint");
  if (x.numel() == 0) return;
  const int64_t slices = x.size(0) * x.size(1);
  MORPHAUG_DISPATCH_FLAT_GREY(x.scalar_type(), "morphaug::grey_footprint (CPU)", [&] {
    const scalar_t fill = box_fill<scalar_t>(cval, "grey_footprint");
    grey_footprint_pass(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), slices, f, fill, maximum);
  });
}

at::Tensor grey_footprint_cpu(const at::Tensor& input, at::IntArrayRef shape,
                              at::IntArrayRef footprint, at::IntArrayRef origin,
                              at::IntArrayRef mode, const at::Scalar& cval, bool maximum) {
  at::Tensor out = empty_output(input);
  grey_footprint_out_cpu(input, shape, footprint, origin, mode, cval, maximum, out);
  return out;
}

}  // namespace morphaug
