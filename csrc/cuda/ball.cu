// CUDA launcher of morphaug::ball_morphology (core/ball.h): int32 values, so
// any radius (no host read of the radii); a thread per line along the first
// spatial axis, then per value on each further axis, ping-pong buffers.
#include <algorithm>

#include "../core/ball.h"
#include "../launch.h"
#include "grid.cuh"

namespace morphaug {
namespace {

using Value = int32_t;

// Each slice's radius (>= 0), metric code and op.
struct BallSlices {
  const int64_t* radius;
  const int64_t* metric;
  const bool* erode;
};

// One line along the first spatial axis per thread: `lanes` lines per slice.
__global__ void first_axis_kernel(const uint8_t* mask, Value* v, int64_t slices, int64_t n,
                                  int64_t lanes, BallSlices s) {
  for (int64_t line = grid_start(); line < slices * lanes; line += grid_step()) {
    const int64_t slice = line / lanes;
    const int64_t o = slice * n * lanes + (line - slice * lanes);
    const int32_t r = static_cast<int32_t>(s.radius[slice]);
    if (r == 0) continue;  // the slice is copied at the end
    const bool erode = s.erode[slice];
    const uint8_t seed = erode ? 0 : 1;
    switch (s.metric[slice]) {
      case kBallEuclidean:
        ball_first_axis<kBallEuclidean, Value>(mask + o, seed, erode, v + o, n, 1, lanes, r);
        break;
      case kBallTaxicab:
        ball_first_axis<kBallTaxicab, Value>(mask + o, seed, erode, v + o, n, 1, lanes, r);
        break;
      default:
        ball_first_axis<kBallChessboard, Value>(mask + o, seed, erode, v + o, n, 1, lanes, r);
    }
  }
}

// A further axis of length n with `lanes` values per row: one value per
// thread by its window (taxicab and chessboard too: no per-line sweep state).
__global__ void further_axis_kernel(const Value* in, Value* out, int64_t numel, int64_t slice_numel,
                                    int64_t n, int64_t lanes, BallSlices s) {
  for (int64_t p = grid_start(); p < numel; p += grid_step()) {
    const int64_t slice = p / slice_numel;
    const int32_t r = static_cast<int32_t>(s.radius[slice]);
    if (r == 0) continue;
    const int64_t within = p - slice * slice_numel;
    const int64_t i = within / lanes % n;  // position along the axis
    const Value* line = in + (p - i * lanes);
    const bool erode = s.erode[slice];
    Value value;
    switch (s.metric[slice]) {
      case kBallEuclidean:
        value = ball_window<kBallEuclidean, Value>(line, i, n, lanes, r, erode);
        break;
      case kBallTaxicab:
        value = ball_window<kBallTaxicab, Value>(line, i, n, lanes, r, erode);
        break;
      default:
        value = ball_window<kBallChessboard, Value>(line, i, n, lanes, r, erode);
    }
    out[p] = value;
  }
}

// The ball test (or a copy of the mask where r = 0), complemented for erosion.
__global__ void finish_kernel(const uint8_t* mask, const Value* v, bool* out, int64_t numel,
                              int64_t slice_numel, BallSlices s) {
  for (int64_t p = grid_start(); p < numel; p += grid_step()) {
    const int64_t slice = p / slice_numel;
    const int32_t r = static_cast<int32_t>(s.radius[slice]);
    if (r == 0) {
      out[p] = mask[p] != 0;
      continue;
    }
    const bool inside = s.metric[slice] == kBallEuclidean ? ball_inside<kBallEuclidean>(v[p], r)
                                                          : ball_inside<kBallTaxicab>(v[p], r);
    out[p] = inside != s.erode[slice];
  }
}

void ball_morphology_out_cuda(const at::Tensor& mask, const at::Tensor& radius,
                              const at::Tensor& metric, const at::Tensor& erode, at::Tensor& out) {
  const cuda::DeviceGuard guard(mask.device());
  check_ball_arguments(mask, radius, metric, erode);
  // Metric codes are checked on the device, without a host read: a bad one
  // fails a device-side assertion (at once on CPU tensors, in emulation).
  at::_assert_async(metric.ge(kBallEuclidean).logical_and(metric.le(kBallChessboard)).all(),
                    "morphaug::ball_morphology: metric codes are 0 (euclidean), 1 (taxicab) and 2 "
                    "(chessboard)");
  const at::Tensor x = mask.contiguous();
  check_out(out, x, "ball_morphology");
  const int64_t slices = x.size(0) * x.size(1);
  if (x.numel() == 0) return;
  // Radii are not read on the host: negative ones count as 0, and int32
  // values hold r^2 + 1 + r^2 for every r below 2^15 (clamped there).
  const at::Tensor radii = radius.clamp(0, (1 << 15) - 1).contiguous();
  const at::Tensor metrics = metric.contiguous(), erodes = erode.contiguous();
  const BallSlices s{radii.data_ptr<int64_t>(), metrics.data_ptr<int64_t>(), erodes.data_ptr<bool>()};
  const int64_t numel = x.numel(), slice_numel = numel / slices;
  at::Tensor a = at::empty(x.sizes(), x.options().dtype(at::kInt));
  at::Tensor b = x.dim() > 3 ? at::empty_like(a) : at::Tensor();
  const uint8_t* source = reinterpret_cast<const uint8_t*>(x.data_ptr<bool>());
  const cudaStream_t stream = cuda::current_stream();
  const int64_t first = x.size(2);
  cuda::launch<first_axis_kernel>(blocks_for(slices * (slice_numel / first)), kThreads, stream,
      source, a.data_ptr<Value>(), slices, first, slice_numel / first, s);
  int64_t outer = first;
  for (int64_t d = 3; d < x.dim(); ++d) {
    const int64_t n = x.size(d), lanes = slice_numel / (outer * n);
    cuda::launch<further_axis_kernel>(blocks_for(numel), kThreads, stream,
        a.data_ptr<Value>(), b.data_ptr<Value>(), numel, slice_numel, n, lanes, s);
    std::swap(a, b);
    outer *= n;
  }
  cuda::launch<finish_kernel>(blocks_for(numel), kThreads, stream, source, a.data_ptr<Value>(),
                              out.data_ptr<bool>(), numel, slice_numel, s);
}

at::Tensor ball_morphology_cuda(const at::Tensor& mask, const at::Tensor& radius,
                                const at::Tensor& metric, const at::Tensor& erode) {
  at::Tensor out = at::empty(mask.sizes(), mask.options());
  ball_morphology_out_cuda(mask, radius, metric, erode, out);
  return out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) {
  m.impl("ball_morphology", &ball_morphology_cuda);
  m.impl("ball_morphology.out", &ball_morphology_out_cuda);
}

}  // namespace morphaug
