// CUDA launcher of morphaug::grey_box: one van Herk pass per filtered axis, a
// thread per line, ping-pong buffers between passes.
#include <ATen/Dispatch.h>

#include <algorithm>
#include <vector>

#include "../core/grey.h"
#include "../grey_dispatch.h"
#include "../launch.h"
#include "runtime.cuh"

namespace morphaug {
namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxBlocks = 65535;

template <typename T, bool Max>
__global__ void box_pass_kernel(const T* in, T* out, Lines lines, BoxAxis a, T cval) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t line = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       line < lines.count; line += step) {
    const int64_t o = lines.offset(line);
    T carry, fill;
    box_lines<T, Max>(in + o, out + o, lines.length, lines.stride, 1, a.k, a.left, a.mode, cval,
                      &carry, &fill);
  }
}

void grey_box_out_cuda(const at::Tensor& input, at::IntArrayRef size, at::IntArrayRef origin,
                       at::IntArrayRef mode, const at::Scalar& cval, bool maximum,
                       at::Tensor& out) {
  const cuda::DeviceGuard guard(input.device());
  const std::vector<BoxAxis> axes = grey_box_axes(input, size, origin, mode);
  const at::Tensor x = input.contiguous();
  check_out(out, x, "grey_box");
  if (x.numel() == 0) return;
  if (axes.empty()) {
    out.copy_(x);
    return;
  }
  const at::Tensor scratch = axes.size() > 1 ? at::empty_like(out) : at::Tensor();
  const int passes = static_cast<int>(axes.size());
  const cudaStream_t stream = cuda::current_stream();
  MORPHAUG_DISPATCH_FLAT_GREY(x.scalar_type(), "morphaug::grey_box (CUDA)", [&] {
    const scalar_t fill = box_fill<scalar_t>(cval);
    const scalar_t* src = x.data_ptr<scalar_t>();
    for (int p = 0; p < passes; ++p) {
      scalar_t* dst = pass_target(p, passes, out, scratch).data_ptr<scalar_t>();
      const Lines lines = lines_along(x, axes[p].axis);
      const int blocks =
          static_cast<int>(std::min((lines.count + kThreads - 1) / kThreads, kMaxBlocks));
      if (maximum) {
        cuda::launch<box_pass_kernel<scalar_t, true>>(blocks, kThreads, stream, src, dst, lines,
                                                      axes[p], fill);
      } else {
        cuda::launch<box_pass_kernel<scalar_t, false>>(blocks, kThreads, stream, src, dst, lines,
                                                       axes[p], fill);
      }
      src = dst;
    }
  });
}

at::Tensor grey_box_cuda(const at::Tensor& input, at::IntArrayRef size, at::IntArrayRef origin,
                         at::IntArrayRef mode, const at::Scalar& cval, bool maximum) {
  at::Tensor out = at::empty(input.sizes(), input.options());
  grey_box_out_cuda(input, size, origin, mode, cval, maximum, out);
  return out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) {
  m.impl("grey_box", &grey_box_cuda);
  m.impl("grey_box.out", &grey_box_out_cuda);
}

}  // namespace morphaug
