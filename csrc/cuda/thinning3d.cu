// CUDA launcher of morphaug::skeletonize_parallel (core/thinning3d.h): the
// parallel method's rounds on every slice of the batch at once, each slice
// zero-padded in a byte per voxel. Per border direction:
//   mark_kernel: every voxel of the direction's border that is simple and
//     not an end point is marked, in a byte per voxel;
//   delete_kernel, once per subfield: its marked voxels still simple are
//     deleted, and counted per slice on the device.
// A slice whose previous round deleted nothing is at its fixpoint: its blocks
// return at once. Rounds alternate two count rows (this round's, zeroed by
// its first mark, and the previous one's, read); the host launches `rounds`
// rounds and reads nothing (the caller reads `still` every few calls).
//
// Blocks of kLanes threads take neighbouring voxels of one row (coalesced
// along W; a subfield's voxels every other one); blockIdx.x is the row and
// the block along it (32-bit math, once per block), blockIdx.y the slice.
#include <tuple>

#include "../core/thinning3d.h"
#include "../launch.h"
#include "../thinning3d_checks.h"
#include "grid.cuh"

namespace morphaug {
namespace {

constexpr int kLanes = 128;

struct Changes {
  int8_t of[128];  // the Euler changes, by value
};

// The Euler changes in shared memory, copied by one thread at constant indices: a kernel parameter
// indexed at run time (by a voxel's code, or a thread's) is first copied to local memory, per thread.
__device__ __forceinline__ void stage_changes(Changes changes, int8_t* shared) {
  if (threadIdx.x == 0) {
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int k = 0; k < 128; ++k) shared[k] = changes.of[k];
  }
  __syncthreads();
}

// A padded slice: its interior (D, H, W), row and plane strides and size.
struct Shape {
  int32_t depth, height, width, row, plane, padded;
  int64_t slices;
};

// The voxels a launch visits: padded coordinates (z, y, x) = (k step + start) for k below the counts,
// step 1 (the interior) or 2 (a subfield, start 2 - its parity); a block of kLanes threads per run of x
// in a row (blockIdx.x: the row and the block along it).
struct Rows {
  int32_t count_z, count_y, count_x, blocks_x, step, start_z, start_y, start_x;

  // This thread's voxel `at` of the padded slice and its raster index `inner` among the visited
  // ones, or false past the row's end.
  __device__ __forceinline__ bool voxel(const Shape& s, int32_t& at, int32_t& inner) const {
    const int32_t block = static_cast<int32_t>(blockIdx.x);
    const int32_t r = block / blocks_x, bx = block - r * blocks_x;
    const int32_t z = r / count_y, y = r - z * count_y;
    const int32_t x = bx * kLanes + static_cast<int32_t>(threadIdx.x);
    if (x >= count_x) return false;
    at = (z * step + start_z) * s.plane + (y * step + start_y) * s.row + x * step + start_x;
    inner = r * count_x + x;
    return true;
  }

  bool empty() const { return count_z == 0 || count_y == 0 || count_x == 0; }

  dim3 grid(const Shape& s) const {
    return dim3(static_cast<unsigned>(count_z * count_y * blocks_x),
                static_cast<unsigned>(std::min<int64_t>(s.slices, kMaxBlocks)));
  }
};

// The interior (sub < 0) or subfield `sub` of the slices.
Rows rows_of(const Shape& s, int sub) {
  if (sub < 0) return Rows{s.depth, s.height, s.width, (s.width + kLanes - 1) / kLanes, 1, 1, 1, 1};
  auto count = [](int32_t n, int parity) { return parity == 1 ? (n + 1) / 2 : n / 2; };  // among 1 .. n
  const int pz = (sub >> 2) & 1, py = (sub >> 1) & 1, px = sub & 1;
  const int32_t nx = count(s.width, px);
  return Rows{count(s.depth, pz), count(s.height, py), nx, (nx + kLanes - 1) / kLanes, 2, 2 - pz, 2 - py, 2 - px};
}

// The padded copy of every slice (zero borders); the first count row set from `active`.
__global__ void pad_kernel(const bool* mask, const bool* active, uint8_t* image, int32_t* previous, Shape s) {
  for (int64_t slice = blockIdx.y; slice < s.slices; slice += gridDim.y) {
    if (blockIdx.x == 0 && threadIdx.x == 0) previous[slice] = active[slice] ? 1 : 0;
    const bool* in = mask + slice * s.depth * s.height * s.width;
    uint8_t* out = image + slice * s.padded;
    for (int32_t at = static_cast<int32_t>(blockIdx.x) * kLanes + static_cast<int32_t>(threadIdx.x); at < s.padded;
         at += static_cast<int32_t>(gridDim.x) * kLanes) {
      const int32_t z = at / s.plane, rest = at - z * s.plane, y = rest / s.row, x = rest - y * s.row;
      const bool inside = z >= 1 && z <= s.depth && y >= 1 && y <= s.height && x >= 1 && x <= s.width;
      out[at] = inside ? in[((z - 1) * s.height + (y - 1)) * s.width + x - 1] : 0;
    }
  }
}

// Marks the direction's candidates (`face`: the offset of its face neighbour); the first direction
// of a round zeroes the round's count row.
__global__ void mark_kernel(const uint8_t* image, uint8_t* marked, const int32_t* previous, int32_t* current,
                            bool first, int32_t face, Shape s, Rows r, Changes changes) {
  __shared__ int8_t table[128];
  stage_changes(changes, table);
  for (int64_t slice = blockIdx.y; slice < s.slices; slice += gridDim.y) {
    if (first && blockIdx.x == 0 && threadIdx.x == 0) current[slice] = 0;
    int32_t at, inner;
    if (previous[slice] == 0 || !r.voxel(s, at, inner)) continue;
    const uint8_t* in = image + slice * s.padded;
    bool mark = in[at] != 0 && in[at + face] == 0;
    if (mark) mark = thinning3d::candidate(thinning3d::code_at(in, at, s.row, s.plane), table);
    marked[slice * s.padded + at] = mark;
  }
}

// Deletes the marked voxels of one subfield that are still simple, counting them.
__global__ void delete_kernel(uint8_t* image, const uint8_t* marked, const int32_t* previous, int32_t* current,
                              Shape s, Rows r, Changes changes) {
  __shared__ int8_t table[128];
  stage_changes(changes, table);
  for (int64_t slice = blockIdx.y; slice < s.slices; slice += gridDim.y) {
    int32_t at, inner;
    if (previous[slice] == 0 || !r.voxel(s, at, inner) || !marked[slice * s.padded + at]) continue;
    uint8_t* in = image + slice * s.padded;
    if (thinning3d::simple(thinning3d::code_at<int32_t>(in, at, s.row, s.plane), table)) {
      in[at] = 0;
      atomicAdd(&current[slice], 1);
    }
  }
}

// The interiors back to bool, and whether each slice's last round deleted something.
__global__ void unpad_kernel(const uint8_t* image, const int32_t* last, bool* out, bool* still, Shape s, Rows r) {
  for (int64_t slice = blockIdx.y; slice < s.slices; slice += gridDim.y) {
    if (blockIdx.x == 0 && threadIdx.x == 0) still[slice] = last[slice] != 0;
    int32_t at, inner;
    if (r.voxel(s, at, inner)) out[slice * s.depth * s.height * s.width + inner] = image[slice * s.padded + at] != 0;
  }
}

std::tuple<at::Tensor, at::Tensor> skeletonize_parallel_cuda(const at::Tensor& mask, const at::Tensor& active,
                                                             at::IntArrayRef euler_changes, int64_t rounds) {
  check_skeletonize_parallel(mask, active, euler_changes);
  TORCH_CHECK(rounds >= 1, "morphaug::skeletonize_parallel: on CUDA, rounds must be at least 1, got ", rounds);
  const int64_t padded = (mask.size(2) + 2) * (mask.size(3) + 2) * (mask.size(4) + 2);
  TORCH_CHECK(padded < (int64_t{1} << 31), "morphaug::skeletonize_parallel: slices of ", mask.sizes().slice(2),
              " take more than 2^31 padded voxels");
  Changes changes{};
  for (int k = 0; k < 128; ++k) {
    TORCH_CHECK(euler_changes[k] >= -128 && euler_changes[k] < 128, "morphaug::skeletonize_parallel: euler change ",
                euler_changes[k], " out of range");
    changes.of[k] = static_cast<int8_t>(euler_changes[k]);
  }
  const cuda::DeviceGuard guard(mask.device());
  const at::Tensor m = mask.contiguous(), a = active.contiguous();
  at::Tensor out = at::empty(m.sizes(), m.options());
  at::Tensor still = at::empty(a.sizes(), a.options());
  const int64_t slices = mask.size(0) * mask.size(1);
  if (slices == 0) return {out, still};
  if (m.numel() == 0) return {out, still.fill_(false)};
  Shape s{};
  s.depth = static_cast<int32_t>(mask.size(2));
  s.height = static_cast<int32_t>(mask.size(3));
  s.width = static_cast<int32_t>(mask.size(4));
  s.row = s.width + 2;
  s.plane = (s.height + 2) * s.row;
  s.padded = static_cast<int32_t>(padded);
  s.slices = slices;
  const auto bytes = m.options().dtype(at::kByte);
  at::Tensor image = at::empty({slices * padded}, bytes), marked = at::empty({slices * padded}, bytes);
  at::Tensor counts = at::empty({2, slices}, m.options().dtype(at::kInt));
  uint8_t* I = image.data_ptr<uint8_t>();
  uint8_t* M = marked.data_ptr<uint8_t>();
  int32_t* row[2] = {counts.data_ptr<int32_t>(), counts.data_ptr<int32_t>() + slices};
  const cudaStream_t stream = cuda::current_stream();
  const dim3 pad_grid(static_cast<unsigned>(std::min<int64_t>((padded + kLanes - 1) / kLanes, kMaxBlocks)),
                      static_cast<unsigned>(std::min<int64_t>(slices, kMaxBlocks)));
  cuda::launch<pad_kernel>(pad_grid, kLanes, stream, m.data_ptr<bool>(), a.data_ptr<bool>(), I, row[1], s);
  const Rows every = rows_of(s, -1);
  const int32_t faces[6] = {-s.row, s.row, 1, -1, s.plane, -s.plane};  // W, E, S, N, U, B
  const int directions = s.depth == 1 ? 4 : 6;
  for (int64_t round = 0; round < rounds; ++round) {
    int32_t* previous = row[(round + 1) & 1];
    int32_t* current = row[round & 1];
    for (int d = 0; d < directions; ++d) {
      cuda::launch<mark_kernel>(every.grid(s), kLanes, stream, I, M, previous, current, d == 0, faces[d], s,
                                every, changes);
      for (int sub = 0; sub < 8; ++sub) {
        const Rows part = rows_of(s, sub);
        if (part.empty()) continue;
        cuda::launch<delete_kernel>(part.grid(s), kLanes, stream, I, M, previous, current, s, part, changes);
      }
    }
  }
  cuda::launch<unpad_kernel>(every.grid(s), kLanes, stream, I, row[(rounds - 1) & 1], out.data_ptr<bool>(),
                             still.data_ptr<bool>(), s, every);
  return {out, still};
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("skeletonize_parallel", &skeletonize_parallel_cuda); }

}  // namespace morphaug
