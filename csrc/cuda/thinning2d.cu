// CUDA launcher of morphaug::thinning2d (core/thinning2d.h): one launch per sub-iteration over the
// whole batch, a thread per pixel in tiles of 32 x 8 (a warp along W), 32-bit indices inside a
// slice, no host read (the caller reads the deleted count every few iterations).
//
// The sub-iterations work in place in one byte per pixel holding two states: sub-iteration s reads
// bit s & 1 of its neighbours (the image before it) and writes bit (s + 1) & 1 of its own pixel
// (after it), keeping the bit it read, so no thread writes what another reads. The first reads the
// input, the last writes the output. Per slice, the pixels deleted by each sub-iteration are counted
// in a ring of four slots (sub-iteration s adds to slot s % 4, reads slots s - 1 and s - 2, clears
// slot s + 1): a slice whose last two sub-iterations deleted nothing is at its fixpoint, its two
// bits equal, and its blocks return at once. The pixels deleted by the last iteration are summed
// into one more slot, the op's second output.
#include "../core/thinning2d.h"
#include "../launch.h"
#include "grid.cuh"

namespace morphaug {
namespace {

constexpr int kTileW = 32, kTileH = 8;

// Sub-iteration `index` of a launcher call (the slot of its count: index % 4).
struct Pass {
  int64_t index;
  bool last;     // writes the output (0/1 bytes) instead of the work image
  bool counted;  // of the last iteration: its deletions go to the total too
};

// Blocks (tile x, tile y, slice), grid-stride over the slices beyond gridDim.z.
__global__ void __launch_bounds__(kTileW * kTileH)
    thinning2d_kernel(const uint8_t* src, uint8_t* dst, int64_t slices, int32_t h, int32_t w,
                      ThinningTables tables, Pass pass, unsigned long long* counts) {
  const int read = static_cast<int>(pass.index & 1), write = read ^ 1;
  const int64_t slot = pass.index & 3;
  const int32_t x = static_cast<int32_t>(blockIdx.x * kTileW + threadIdx.x);
  const int32_t y = static_cast<int32_t>(blockIdx.y * kTileH + threadIdx.y);
  const bool inside = x < w && y < h;
  const int32_t at = y * w + x;
  const bool lead = blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0;
  for (int64_t slice = blockIdx.z; slice < slices; slice += gridDim.z) {
    unsigned long long* ring = counts + slice;  // slot k of the slice at ring[k * slices]
    if (lead) ring[((slot + 1) & 3) * slices] = 0;
    const bool active =
        pass.index < 2 || ring[((slot + 3) & 3) * slices] + ring[((slot + 2) & 3) * slices] > 0;
    const int64_t base = slice * h * static_cast<int64_t>(w);
    const uint8_t* s = src + base;
    if (!active) {  // at its fixpoint: both bits hold the image
      if (pass.last && inside) dst[base + at] = (s[at] >> read) & 1u;
      continue;
    }
    bool deleted = false;
    if (inside) {
      const uint8_t* row = s + (at - x);
      const unsigned value = (row[x] >> read) & 1u;
      deleted = value && tables.deletes(read, thinning_code(y > 0 ? row - w : nullptr, row,
                                                               y + 1 < h ? row + w : nullptr, x, w, read));
      const unsigned kept = value && !deleted;
      dst[base + at] = static_cast<uint8_t>(pass.last ? kept : (value << read) | (kept << write));
    }
    const unsigned votes = __ballot_sync(0xffffffffu, deleted);
    if (votes != 0 && (threadIdx.x & 31u) == 0) {
      const auto n = static_cast<unsigned long long>(bit_count(votes));
      atomicAdd(ring + slot * slices, n);
      if (pass.counted) atomicAdd(counts + 4 * slices, n);
    }
  }
}

std::tuple<at::Tensor, at::Tensor> thinning2d_cuda(const at::Tensor& mask, at::IntArrayRef tables,
                                                   int64_t iterations) {
  const ThinningTables t = thinning2d_setup(mask, tables, iterations);
  cuda::DeviceGuard guard(mask.device());
  const at::Tensor m = mask.contiguous();
  at::Tensor out = at::empty(m.sizes(), m.options());
  const int64_t slices = m.size(0) * m.size(1);
  const int32_t h = static_cast<int32_t>(m.size(2)), w = static_cast<int32_t>(m.size(3));
  at::Tensor counts = at::zeros({4 * slices + 1}, m.options().dtype(at::kLong));
  at::Tensor deleted = counts.narrow(0, 4 * slices, 1).squeeze(0);
  if (m.numel() == 0) return {out, deleted};
  at::Tensor work = at::empty(m.sizes(), m.options().dtype(at::kByte));
  const uint8_t* in = reinterpret_cast<const uint8_t*>(m.data_ptr<bool>());
  uint8_t* o = reinterpret_cast<uint8_t*>(out.data_ptr<bool>());
  uint8_t* k = work.data_ptr<uint8_t>();
  auto* c = reinterpret_cast<unsigned long long*>(counts.data_ptr<int64_t>());
  const dim3 grid(static_cast<unsigned>((w + kTileW - 1) / kTileW), static_cast<unsigned>((h + kTileH - 1) / kTileH),
                  static_cast<unsigned>(std::min<int64_t>(slices, kMaxBlocks)));
  const dim3 block(kTileW, kTileH);
  const cudaStream_t stream = cuda::current_stream();
  const int64_t passes = 2 * iterations;
  for (int64_t p = 0; p < passes; ++p) {
    const Pass pass{p, p == passes - 1, p >= passes - 2};
    cuda::launch<thinning2d_kernel>(grid, block, stream, p == 0 ? in : k, pass.last ? o : k, slices, h, w, t,
                                    pass, c);
  }
  return {out, deleted};
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("thinning2d", &thinning2d_cuda); }

}  // namespace morphaug
