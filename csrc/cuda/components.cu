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
//
// And of morphaug::pick_component (RandRemoveComponent): steps 1-4, then
//   5. tally_kernel: each chunk's eligible components (roots of fewer than
//      max_size voxels), summed over the chunks of its slice by a cumsum;
//   6. select_kernel: in the chunk that holds the drawn rank, a block-wide
//      count of the eligible roots before each voxel finds the drawn root;
//   7. pick_kernel: a thread per voxel marks the drawn root's voxels.
// A (B * C, chunks) int32 table and the drawn roots, no host read: label's
// union-find launches, 5 more, a cumsum and a fill.
#include <ATen/ops/cumsum.h>
#include <ATen/ops/full.h>

#include "../components_setup.h"
#include "../core/components.h"
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
    key = warp_extremum<true>(key);
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

// Whether the voxel i of a slice whose parents P are counted (step 4) is the
// root of a component of fewer than max_size voxels.
__device__ __forceinline__ bool eligible_root(const int32_t* P, int32_t i, int32_t numel, int64_t max_size) {
  if (i >= numel) return false;
  const int32_t held = P[i];
  return held != kNoParent<int32_t> && held < 0 && component_size(held) < max_size;
}

// Step 5 of pick_component: tallies[slice][chunk] = the chunk's eligible roots.
__global__ void tally_kernel(const int32_t* parent, int32_t numel, int64_t slices, int64_t max_size,
                             int32_t* tallies) {
  __shared__ int32_t warps[kChunk / 32];
  const int32_t i = static_cast<int32_t>(blockIdx.x) * kChunk + static_cast<int32_t>(threadIdx.x);
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    int32_t total = 0;
    block_count_before(eligible_root(parent + slice * numel, i, numel, max_size), warps, &total);
    if (threadIdx.x == 0) tallies[slice * gridDim.x + blockIdx.x] = total;
  }
}

// Step 6: drawn[slice] = the root of the eligible component of the drawn rank
// (left -1 where none goes). `ends`: the tallies' cumsum along each slice.
__global__ void select_kernel(const int32_t* parent, int32_t numel, int64_t slices, int64_t max_size,
                              const int32_t* ends, const float* draw, int32_t* drawn) {
  __shared__ int32_t warps[kChunk / 32];
  const int32_t i = static_cast<int32_t>(blockIdx.x) * kChunk + static_cast<int32_t>(threadIdx.x);
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    const int32_t* end = ends + slice * gridDim.x;
    const int64_t rank = drawn_rank(draw[slice], end[gridDim.x - 1]);
    const int32_t start = blockIdx.x == 0 ? 0 : end[blockIdx.x - 1];
    if (rank < start || rank >= end[blockIdx.x]) continue;  // the same for the whole block
    const bool flag = eligible_root(parent + slice * numel, i, numel, max_size);
    int32_t total = 0;
    const int32_t before = block_count_before(flag, warps, &total);
    if (flag && start + before == rank) drawn[slice] = i;
  }
}

// Step 7: out = the voxels of each slice's drawn root.
__global__ void pick_kernel(const bool* mask, const int32_t* parent, int32_t numel, int64_t slices,
                            const int32_t* drawn, bool* out) {
  const int32_t i = static_cast<int32_t>(blockIdx.x) * kChunk + static_cast<int32_t>(threadIdx.x);
  if (i >= numel) return;
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    const int32_t root = drawn[slice];
    if (root < 0 || !mask[slice * numel + i]) continue;
    const int32_t up = parent[slice * numel + i];
    out[slice * numel + i] = (up < 0 ? i : up) == root;
  }
}

// Steps 1-4 on every slice of `mask`: int32 parents, each voxel's its root's,
// each root's -1 - (its component's voxels); with the contiguous mask and the
// grid of the chunk-wise kernels.
struct CountedParents {
  at::Tensor mask, parent;
  int32_t numel;
  dim3 grid;
};

CountedParents counted_parents(const at::Tensor& mask, const LabelSetup& s, cudaStream_t stream) {
  CountedParents c{mask.contiguous(), at::empty(mask.sizes(), mask.options().dtype(at::kInt)),
                   static_cast<int32_t>(s.shape.numel), chunk_grid((s.shape.numel + kChunk - 1) / kChunk, s.slices)};
  int32_t* P = c.parent.data_ptr<int32_t>();
  const DeviceLinks links(HostLinks{s.delta, s.linear, {}}, nullptr, 0, mask.device());
  union_tiles<int32_t>(Voxels{c.mask.data_ptr<bool>(), nullptr, Region::kInput}, P, make_tiles(s.shape), links.links,
                       s.slices, stream);
  cuda::launch<root_kernel>(c.grid, kChunk, stream, P, c.numel, s.slices);
  cuda::launch<count_kernel>(c.grid, kChunk, stream, P, c.numel, s.slices);
  return c;
}

at::Tensor filter_components_cuda(const at::Tensor& mask, at::IntArrayRef structure, int64_t keep,
                                  int64_t min_size) {
  const cuda::DeviceGuard guard(mask.device());
  FilterSetup f = filter_setup(mask, structure, keep, min_size);
  if (mask.numel() == 0) return f.out;
  const LabelSetup& s = f.labels;
  const cudaStream_t stream = cuda::current_stream();
  const CountedParents c = counted_parents(mask, s, stream);
  const bool* source = c.mask.data_ptr<bool>();
  const int32_t* P = c.parent.data_ptr<int32_t>();
  // a slice holds at most ceil(numel / 2) components (no two of them face neighbours): a keep beyond
  // that ranks none out
  at::Tensor ranks;
  const unsigned long long* kth = nullptr;
  if (keep >= 1 && keep < (s.shape.numel + 1) / 2) {
    ranks = at::zeros({keep, s.slices}, mask.options().dtype(at::kLong));
    auto* rank = reinterpret_cast<unsigned long long*>(ranks.data_ptr<int64_t>());
    for (int64_t j = 0; j < keep; ++j) {
      cuda::launch<rank_kernel>(c.grid, kChunk, stream, source, P, c.numel, s.slices,
                                j == 0 ? nullptr : rank + (j - 1) * s.slices, rank + j * s.slices);
    }
    kth = rank + (keep - 1) * s.slices;
  }
  const int64_t samples = mask.size(0), channels = mask.size(1);
  cuda::launch<mark_kernel>(chunk_grid((s.shape.numel + kChunk - 1) / kChunk, samples), kChunk, stream, source,
                            P, c.numel, samples, channels, kth, min_size, f.out.data_ptr<bool>());
  return f.out;
}

at::Tensor pick_component_cuda(const at::Tensor& mask, at::IntArrayRef structure, const at::Tensor& draw,
                               int64_t max_size) {
  const cuda::DeviceGuard guard(mask.device());
  PickSetup p = pick_setup(mask, structure, draw, max_size);
  if (mask.numel() == 0) return p.out;
  const LabelSetup& s = p.labels;
  const cudaStream_t stream = cuda::current_stream();
  const CountedParents c = counted_parents(mask, s, stream);
  const int32_t* P = c.parent.data_ptr<int32_t>();
  at::Tensor tallies = at::empty({s.slices, static_cast<int64_t>(c.grid.x)}, c.parent.options());
  cuda::launch<tally_kernel>(c.grid, kChunk, stream, P, c.numel, s.slices, max_size, tallies.data_ptr<int32_t>());
  const at::Tensor ends = at::cumsum(tallies, 1, at::kInt);
  at::Tensor drawn = at::full({s.slices}, -1, c.parent.options());
  cuda::launch<select_kernel>(c.grid, kChunk, stream, P, c.numel, s.slices, max_size, ends.data_ptr<int32_t>(),
                              p.draw.data_ptr<float>(), drawn.data_ptr<int32_t>());
  cuda::launch<pick_kernel>(c.grid, kChunk, stream, c.mask.data_ptr<bool>(), P, c.numel, s.slices,
                            drawn.data_ptr<int32_t>(), p.out.data_ptr<bool>());
  return p.out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) {
  m.impl("filter_components", &filter_components_cuda);
  m.impl("pick_component", &pick_component_cuda);
}

}  // namespace morphaug
