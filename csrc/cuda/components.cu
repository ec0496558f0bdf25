// CUDA launcher of morphaug::filter_components (KeepLargestComponents,
// RemoveSmallComponents): the block-based union-find of label_tiles.cuh on
// every (b, c) mask, then over each slice's voxels in raster chunks (a block
// per kChunk voxels, the slices along blockIdx.y):
//   3. root_kernel: each voxel points at its component's root (its first
//      voxel in raster order), whose entry becomes -1;
//   4. count_kernel: each run of lanes of a warp on one component subtracts
//      its length from the root's entry, which ends as -1 - (its voxels);
//   5. rank_kernel (keep >= 1), once per kept rank j: each slice's greatest
//      component key (size, then root: the later component first among equal
//      sizes, core of the rule in cpu/components.cpp) below rank j - 1's;
//   6. mark_kernel: a thread per (sample, voxel) marks the voxel when its
//      component, in some channel, has fewer than min_size voxels or a key
//      below the keep-th greatest.
// The sizes live in the roots' entries and the ranks in a (keep, B * C) table:
// no table per component, no host read, keep + 5 launches (2 for one tile per slice).
#include "../components_setup.h"
#include "label_tiles.cuh"

namespace morphaug {
namespace {

constexpr unsigned kAllLanes = 0xffffffffu;

// A component's key: its size above its root, so that the larger component,
// then the later one, is the greater.
__device__ __forceinline__ uint64_t component_key(int64_t size, int32_t root) {
  return static_cast<uint64_t>(size) << 32 | static_cast<uint32_t>(root);
}

// The voxels of the component whose root's entry holds `held` after step 4.
__device__ __forceinline__ int64_t component_size(int32_t held) { return -1 - static_cast<int64_t>(held); }

// Step 3.
__global__ void root_kernel(int32_t* parent, int32_t numel, int64_t slices) {
  const int32_t i = static_cast<int32_t>(blockIdx.x) * kChunk + static_cast<int32_t>(threadIdx.x);
  if (i >= numel) return;
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    int32_t* P = parent + slice * numel;
    const int32_t up = P[i];
    if (up == kNoParent<int32_t>) continue;
    const int32_t root = chain_root(P, up);
    P[i] = root == i ? -1 : root;
  }
}

// Step 4. A voxel's own entry is its root, or (a root's) negative while the
// counts come in; background entries stay kNoParent, which no root's entry
// reaches before its own voxel is counted.
__global__ void count_kernel(int32_t* parent, int32_t numel, int64_t slices) {
  const int32_t i = static_cast<int32_t>(blockIdx.x) * kChunk + static_cast<int32_t>(threadIdx.x);
  const unsigned lane = threadIdx.x % 32;
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    int32_t* P = parent + slice * numel;
    int32_t root = -1;  // none: background, or past the slice
    if (i < numel) {
      const int32_t held = P[i];
      if (held != kNoParent<int32_t>) root = held < 0 ? i : held;
    }
    const int32_t before = __shfl_up_sync(kAllLanes, root, 1);
    const bool head = root >= 0 && (lane == 0 || before != root);
    const unsigned heads = __ballot_sync(kAllLanes, head);
    const unsigned ends = heads | __ballot_sync(kAllLanes, root < 0);
    if (head) {
      const unsigned later = ends & ~((2u << lane) - 1u);  // the boundaries after this lane
      const int32_t run = (later != 0 ? __ffs(later) - 1 : 32) - static_cast<int32_t>(lane);
      atomicAdd(&P[root], -run);
    }
  }
}

// Step 5, rank j: best[slice] = the greatest key below above[slice] (j = 0:
// above is null), 0 where no component is left.
__global__ void rank_kernel(const bool* mask, const int32_t* parent, int32_t numel, int64_t slices,
                            const unsigned long long* above, unsigned long long* best) {
  const int32_t i = static_cast<int32_t>(blockIdx.x) * kChunk + static_cast<int32_t>(threadIdx.x);
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    unsigned long long key = 0;
    if (i < numel && mask[slice * numel + i]) {
      const int32_t held = parent[slice * numel + i];
      if (held < 0) key = component_key(component_size(held), i);  // a root
      if (above != nullptr && key >= above[slice]) key = 0;
    }
    for (int lanes = 16; lanes >= 1; lanes /= 2) {
      const unsigned long long other = __shfl_xor_sync(kAllLanes, key, lanes);
      key = other > key ? other : key;
    }
    if (threadIdx.x % 32 == 0 && key != 0) atomicMax(&best[slice], key);
  }
}

// Step 6. `kth`: the keep-th greatest key of each slice (null: keep = 0).
__global__ void mark_kernel(const bool* mask, const int32_t* parent, int32_t numel, int64_t samples,
                            int64_t channels, const unsigned long long* kth, int64_t min_size, bool* out) {
  const int32_t i = static_cast<int32_t>(blockIdx.x) * kChunk + static_cast<int32_t>(threadIdx.x);
  if (i >= numel) return;
  for (int64_t b = blockIdx.y; b < samples; b += gridDim.y) {
    bool removed = false;
    for (int64_t slice = b * channels; slice < (b + 1) * channels && !removed; ++slice) {
      if (!mask[slice * numel + i]) continue;
      const int32_t* P = parent + slice * numel;
      const int32_t up = P[i];
      const int32_t root = up < 0 ? i : up;
      const int64_t size = component_size(up < 0 ? up : P[root]);
      removed = size < min_size || (kth != nullptr && component_key(size, root) < kth[slice]);
    }
    out[b * numel + i] = removed;
  }
}

at::Tensor filter_components_cuda(const at::Tensor& mask, at::IntArrayRef structure, int64_t keep,
                                  int64_t min_size) {
  const cuda::DeviceGuard guard(mask.device());
  FilterSetup f = filter_setup(mask, structure, keep, min_size);
  if (mask.numel() == 0) return f.out;
  const LabelSetup& s = f.labels;
  const at::Tensor m = mask.contiguous();
  const bool* source = m.data_ptr<bool>();
  const cudaStream_t stream = cuda::current_stream();
  at::Tensor parent = at::empty(mask.sizes(), mask.options().dtype(at::kInt));
  int32_t* P = parent.data_ptr<int32_t>();
  const DeviceLinks links(HostLinks{s.delta, s.linear, {}}, nullptr, 0, m.device());
  union_tiles<int32_t>(Voxels{source, nullptr, Region::kInput}, P, make_tiles(s.shape), links.links, s.slices,
                       stream);
  const int32_t numel = static_cast<int32_t>(s.shape.numel);
  const dim3 grid = chunk_grid((s.shape.numel + kChunk - 1) / kChunk, s.slices);
  cuda::launch<root_kernel>(grid, kChunk, stream, P, numel, s.slices);
  cuda::launch<count_kernel>(grid, kChunk, stream, P, numel, s.slices);
  // a slice holds at most ceil(numel / 2) components (no two of them face neighbours): a keep beyond
  // that ranks none out
  at::Tensor ranks;
  const unsigned long long* kth = nullptr;
  if (keep >= 1 && keep < (s.shape.numel + 1) / 2) {
    ranks = at::zeros({keep, s.slices}, mask.options().dtype(at::kLong));
    auto* rank = reinterpret_cast<unsigned long long*>(ranks.data_ptr<int64_t>());
    for (int64_t j = 0; j < keep; ++j) {
      cuda::launch<rank_kernel>(grid, kChunk, stream, source, P, numel, s.slices,
                                j == 0 ? nullptr : rank + (j - 1) * s.slices, rank + j * s.slices);
    }
    kth = rank + (keep - 1) * s.slices;
  }
  const int64_t samples = mask.size(0), channels = mask.size(1);
  cuda::launch<mark_kernel>(chunk_grid((s.shape.numel + kChunk - 1) / kChunk, samples), kChunk, stream, source,
                            P, numel, samples, channels, kth, min_size, f.out.data_ptr<bool>());
  return f.out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("filter_components", &filter_components_cuda); }

}  // namespace morphaug
