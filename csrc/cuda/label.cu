// CUDA launchers of morphaug::label and morphaug::label_values (a value map:
// neighbours of equal value join): the block-based union-find of
// label_tiles.cuh, then SciPy's numbering in two chunk-wise passes:
//   3. flatten_kernel: a block per kChunk voxels of a slice in raster order;
//      each voxel points at its root, and each root holds -(its rank among
//      the roots of its chunk + 1); the block writes its chunk's root count;
//   4. an inclusive scan of the chunk counts per slice (at::cumsum, one value
//      per kChunk voxels) gives each chunk's first number and the counts;
//   5. number_kernel: each voxel takes its root's number in place.
// Roots are the minimum raster index of their component (core/label.h), so
// the numbering is SciPy's. A fixed sequence of launches on the current
// stream: no host sync and no iteration to convergence.
#include <tuple>

#include "label_tiles.cuh"

namespace morphaug {
namespace {

// Step 3. A root's entry turns negative (its rank), so a chain of parents
// ends at an entry equal to its index or negative.
template <typename T>
__global__ void flatten_kernel(T* parent, T numel, int64_t chunks, int64_t* chunk_roots, int64_t slices) {
  __shared__ int32_t warp_roots[kChunk / 32];
  const T i = static_cast<T>(blockIdx.x) * kChunk + static_cast<T>(threadIdx.x);
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    T* P = parent + slice * numel;
    T root = kNoParent<T>;
    if (i < numel) {
      const T up = P[i];
      if (up != kNoParent<T>) root = chain_root(P, up);
    }
    const bool is_root = root == i;
    int32_t total = 0;
    const int32_t rank = block_count_before(is_root, warp_roots, &total);
    if (is_root) {
      P[i] = static_cast<T>(-(rank + 1));
    } else if (root != kNoParent<T>) {
      P[i] = root;
    }
    if (threadIdx.x == 0) chunk_roots[slice * chunks + blockIdx.x] = total;
  }
}

// Step 5. `ranks`: the inclusive scan of the chunk counts. A root's entry
// holds its rank until its own thread writes its number: a voxel reading it
// gets either.
template <typename T>
__global__ void number_kernel(T* parent, T numel, int64_t chunks, const int64_t* ranks, int64_t slices) {
  const T i = static_cast<T>(blockIdx.x) * kChunk + static_cast<T>(threadIdx.x);
  if (i >= numel) return;
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    T* P = parent + slice * numel;
    const int64_t* R = ranks + slice * chunks;
    // the number of a root r whose entry holds `held`
    auto number = [&](T r, T held) {
      const int64_t chunk = r / kChunk;
      return held < 0 ? static_cast<T>((chunk == 0 ? 0 : R[chunk - 1]) - held) : held;
    };
    const T p = P[i];
    P[i] = p == kNoParent<T> ? 0 : p < 0 ? number(i, p) : number(p, P[p]);
  }
}

// The labels and counts of the `voxels` of `mask` (label's mask, or label_values' map).
std::tuple<at::Tensor, at::Tensor> label_voxels(const at::Tensor& mask, const LabelSetup& s, Voxels voxels,
                                                at::ScalarType dtype) {
  at::Tensor labels = at::empty(mask.sizes(), mask.options().dtype(dtype));
  at::Tensor counts = at::zeros({mask.size(0), mask.size(1)}, mask.options().dtype(at::kLong));
  if (mask.numel() == 0) return {labels, counts};
  const at::Tensor m = mask.contiguous();
  if (voxels.kind == Region::kValues) {
    voxels.values = m.const_data_ptr();
  } else {
    voxels.input = m.data_ptr<bool>();
  }
  const LabelShape& shape = s.shape;
  const cudaStream_t stream = cuda::current_stream();
  const HostLinks host{s.delta, s.linear, {}};  // no weights, no columns
  const DeviceLinks links(host, nullptr, 0, m.device());
  const int64_t chunks = (shape.numel + kChunk - 1) / kChunk;
  at::Tensor chunk_roots = at::empty({s.slices, chunks}, counts.options());
  const dim3 grid = chunk_grid(chunks, s.slices);
  AT_DISPATCH_INDEX_TYPES(dtype, "label", [&] {
    index_t* parent = labels.data_ptr<index_t>();
    const index_t numel = static_cast<index_t>(shape.numel);
    union_tiles<index_t>(voxels, parent, make_tiles(shape),
                         links.links, s.slices, stream);
    cuda::launch<flatten_kernel<index_t>>(grid, kChunk, stream, parent, numel, chunks,
                                          chunk_roots.data_ptr<int64_t>(), s.slices);
    const at::Tensor ranks = chunk_roots.cumsum(1);
    counts.copy_(ranks.select(1, chunks - 1).view({mask.size(0), mask.size(1)}));
    cuda::launch<number_kernel<index_t>>(grid, kChunk, stream, parent, numel, chunks,
                                         ranks.data_ptr<int64_t>(), s.slices);
  });
  return {labels, counts};
}

std::tuple<at::Tensor, at::Tensor> label_cuda(const at::Tensor& mask, at::IntArrayRef structure,
                                              at::ScalarType dtype) {
  const cuda::DeviceGuard guard(mask.device());
  return label_voxels(mask, label_setup(mask, structure, dtype), Voxels{nullptr, nullptr, Region::kInput}, dtype);
}

std::tuple<at::Tensor, at::Tensor> label_values_cuda(const at::Tensor& values, at::IntArrayRef structure,
                                                     std::optional<int64_t> background, at::ScalarType dtype) {
  const cuda::DeviceGuard guard(values.device());
  Voxels voxels{nullptr, nullptr, Region::kValues};
  voxels.width = static_cast<int32_t>(values.element_size());
  voxels.has_background = background.has_value();
  // the background's low `width` bytes: the bits a value holding it has
  const int bits = 8 * voxels.width;
  const uint64_t all = static_cast<uint64_t>(background.value_or(0));
  voxels.background = bits == 64 ? all : all & ((uint64_t{1} << bits) - 1);
  return label_voxels(values, label_setup(values, structure, dtype, /*values=*/true), voxels, dtype);
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) {
  m.impl("label", &label_cuda);
  m.impl("label_values", &label_values_cuda);
}

}  // namespace morphaug
