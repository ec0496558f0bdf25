// CUDA launcher of morphaug::edt: one pass per spatial axis, a thread per line,
// ping-pong buffers between passes.
#include <ATen/Dispatch.h>

#include <algorithm>

#include "../core/edt.h"
#include "../launch.h"
#include "runtime.cuh"

namespace morphaug {
namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxLineThreads = int64_t{1} << 15;  // bounds the hull scratch

// Threads of a pass: a grid-stride loop over lines; thread `slot` owns column
// `slot` of the scratch (entries `slots` apart, so that accesses coalesce).
struct Launch {
  int64_t slots;
  int blocks;
};

Launch line_launch(int64_t lines) {
  const int64_t slots = std::min(lines, kMaxLineThreads);
  return Launch{slots, static_cast<int>((slots + kThreads - 1) / kThreads)};
}

template <typename T>
__global__ void binary_pass_kernel(const bool* mask, Lines lines, Geometry g, T* out,
                                   int32_t* idx, int64_t slots, bool root) {
  const int64_t slot = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (slot >= slots) return;
  const int64_t plane = lines.count * lines.length;
  for (int64_t line = slot; line < lines.count; line += slots) {
    const int64_t o = lines.offset(line);
    int32_t previous, next;
    const bool found = edt_binary_lines(mask + o, lines.length, lines.stride, 1, g.sampling[0],
                                        out + o, idx ? idx + o : nullptr, out + o, lines.stride,
                                        &previous, &next, root);
    if (g.rank == 1 && !found) {
      edt_no_background_line(g, o, out + o, idx ? idx + o : nullptr, plane, root);
    }
  }
}

template <typename T>
__global__ void envelope_pass_kernel(int d, Lines lines, Geometry g, bool unit, const T* f, T* out,
                                     const int32_t* idx_in, int32_t* idx_out, void* scratch,
                                     int64_t slots, bool root) {
  const int64_t slot = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (slot >= slots) return;
  const int64_t n = lines.length, stride = lines.stride;
  const int64_t plane = lines.count * n;
  const bool last = d == g.rank - 1;
  for (int64_t line = slot; line < lines.count; line += slots) {
    const int64_t o = lines.offset(line);
    int32_t* arg = idx_out ? idx_out + d * plane + o : nullptr;
    bool found;
    if (unit) {
      EdtParabola<int64_t>* hull = static_cast<EdtParabola<int64_t>*>(scratch) + slot;
      found = edt_envelope_line_unit(f + o, stride, n, out + o, stride, arg, hull, slots, root);
    } else {
      double* hull_f = static_cast<double*>(scratch) + slot;
      int32_t* hull_pos =
          reinterpret_cast<int32_t*>(static_cast<double*>(scratch) + n * slots) + slot;
      found = edt_envelope_line(f + o, stride, n, g.sampling[d], out + o, stride, arg, hull_pos,
                                hull_f, slots, root);
    }
    if (idx_out) edt_gather_indices(idx_in + o, plane, stride, idx_out + o, plane, stride, d, n);
    if (last && !found) {
      edt_no_background_line(g, o, out + o, idx_out ? idx_out + o : nullptr, plane, root);
    }
  }
}

template <typename T>
void edt_passes(const at::Tensor& mask, const EdtSetup& setup, bool squared) {
  const int rank = setup.geometry.rank;
  const bool with_indices = setup.indices.numel() > 0;
  const at::Tensor distances_scratch = rank > 1 ? at::empty_like(setup.distances) : at::Tensor();
  const at::Tensor indices_scratch =
      rank > 1 && with_indices ? at::empty_like(setup.indices) : at::Tensor();
  // Hull scratch of the envelope passes: per thread, n parabolas (16 bytes)
  // with unit sampling, else n doubles and n int32.
  int64_t scratch_bytes = 0;
  for (int d = 1; d < rank; ++d) {
    const Lines lines = lines_along(mask, d);
    scratch_bytes = std::max(scratch_bytes, lines.length * line_launch(lines.count).slots * 16);
  }
  const at::Tensor scratch = at::empty({scratch_bytes}, mask.options().dtype(at::kByte));
  const cudaStream_t stream = cuda::current_stream();
  const T* f = nullptr;
  const int32_t* idx_in = nullptr;
  for (int d = 0; d < rank; ++d) {
    T* out = pass_target(d, rank, setup.distances, distances_scratch).data_ptr<T>();
    int32_t* idx_out =
        with_indices ? pass_target(d, rank, setup.indices, indices_scratch).data_ptr<int32_t>()
                     : nullptr;
    const Lines lines = lines_along(mask, d);
    const Launch launch = line_launch(lines.count);
    const bool root = d == rank - 1 && !squared;
    if (d == 0) {
      cuda::launch<binary_pass_kernel<T>>(launch.blocks, kThreads, stream,
          mask.data_ptr<bool>(), lines, setup.geometry, out, idx_out, launch.slots, root);
    } else {
      cuda::launch<envelope_pass_kernel<T>>(launch.blocks, kThreads, stream,
          d, lines, setup.geometry, setup.unit, f, out, idx_in, idx_out, scratch.data_ptr(),
          launch.slots, root);
    }
    f = out;
    idx_in = idx_out;
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
