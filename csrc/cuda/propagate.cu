// CUDA launchers of morphaug::propagate and morphaug::fill_holes, by
// labelling (label_tiles.cuh): with an element that is centrosymmetric in
// every slice and steps at most one voxel along each axis (the contract,
// kernels.propagate), the fixpoint of the masked dilation is the input plus
// the mask voxels whose component (of input | mask, by the element) holds a
// seed; for fill_holes, the input plus the background components that do not
// touch the slice's outside. After the union-find:
//   3. seed_kernel: each seed flags its root in a byte per voxel: an input
//      voxel (propagate), or a voxel of the region on a face of the slice
//      that a step of its slice's element leads out of (a true border);
//   4. finish_kernel: a block per kChunk voxels in raster order; each voxel
//      finds its root (path halving) and reads its flag.
// A fixed sequence of launches on the current stream: no host sync.
#include <optional>
#include <vector>

#include "label_tiles.cuh"

namespace morphaug {
namespace {

// Step 3, on the tile grid (a voxel's coordinates are its tile's origin and its place there).
template <int kRank>
__global__ void seed_kernel(Voxels voxels, int32_t* parent, uint8_t* seeded, Tiles tiles, Links links,
                            bool border, int64_t slices) {
  __shared__ uint32_t reached;  // the axes a step of the slice's element moves along, a bit each
  const int rank = fixed_rank<kRank>(tiles.rank);
  const int32_t numel = static_cast<int32_t>(tiles.stride[0]) * tiles.size[0];
  const Tile<int32_t, kRank> tile(tiles, static_cast<int32_t>(blockIdx.x));
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    if (threadIdx.x == 0) reached = 0;
    __syncthreads();
    if (border) {
      for (int32_t e = threadIdx.x; e < links.count; e += blockDim.x) {
        if (!links.active(slice, e)) continue;
        uint32_t axes = 0;
        for (int k = 0; k < rank; ++k) axes |= static_cast<uint32_t>(links.delta[e * rank + k] != 0) << k;
        atomicOr(&reached, axes);
      }
    }
    __syncthreads();
    const Voxels in = voxels.slice(slice * numel);
    int32_t* P = parent + slice * numel;
    uint8_t* S = seeded + slice * numel;
    for (int32_t l = threadIdx.x; l < tiles.numel; l += blockDim.x) {
      int32_t within[kMaxRank], v;
      if (!tile.voxel(tiles, l, within, v) || !in(v)) continue;
      bool seed = voxels.kind == Region::kInputOrMask && in.input[v];
      for (int k = 0; k < rank && !seed; ++k) {
        const int32_t c = tile.origin[k] + within[k];
        seed = (reached >> k & 1u) && (c == 0 || c == tiles.size[k] - 1);
      }
      if (seed) S[label_find<true>(P, v)] = 1;
    }
    __syncthreads();  // before the next slice's `reached`
  }
}

// Step 4: fill_holes keeps the input and the unseeded background; propagate the seeded region.
__global__ void finish_kernel(Voxels voxels, int32_t* parent, const uint8_t* seeded, bool* out, int32_t numel,
                              int64_t slices) {
  const int32_t i = static_cast<int32_t>(blockIdx.x) * kChunk + static_cast<int32_t>(threadIdx.x);
  if (i >= numel) return;
  const bool fill = voxels.kind == Region::kBackground;
  for (int64_t slice = blockIdx.y; slice < slices; slice += gridDim.y) {
    const Voxels in = voxels.slice(slice * numel);
    bool result = fill;
    if (in(i)) result = seeded[slice * numel + label_find<true>(parent + slice * numel, i)] != fill;
    out[slice * numel + i] = result;
  }
}

at::Tensor run(const at::Tensor& input, const std::optional<at::Tensor>& mask, const at::Tensor& weights,
               at::IntArrayRef offsets, bool border, bool fill) {
  const cuda::DeviceGuard guard(input.device());
  const PropagateSetup s = propagate_setup(input, mask, weights, offsets);
  at::Tensor out = at::empty(input.sizes(), input.options());
  if (input.numel() == 0) return out;
  const int rank = static_cast<int>(input.dim() - 2);
  std::vector<std::vector<int8_t>> steps(s.count, std::vector<int8_t>(rank));
  for (int64_t e = 0; e < s.count; ++e) {
    for (int k = 0; k < rank; ++k) {
      const int64_t d = offsets[e * rank + k];
      TORCH_CHECK(d >= -1 && d <= 1, "morphaug::", fill ? "fill_holes" : "propagate", ": on CUDA the element ",
                  "steps at most one voxel along each axis, got offset ", d);
      steps[e][k] = static_cast<int8_t>(d);
    }
  }
  const at::Tensor x = input.contiguous();
  const at::Tensor m = mask.has_value() ? mask->contiguous() : at::Tensor();
  const at::Tensor w = weights.contiguous();
  LabelShape shape;
  shape.rank = rank;
  shape.numel = 1;
  for (int k = rank - 1; k >= 0; --k) {
    shape.size[k] = input.size(k + 2);
    shape.stride[k] = shape.numel;
    shape.numel *= shape.size[k];
  }
  const cudaStream_t stream = cuda::current_stream();
  const Voxels voxels{x.data_ptr<bool>(), m.defined() ? m.data_ptr<bool>() : nullptr,
                      fill ? Region::kBackground : Region::kInputOrMask};
  const DeviceLinks links(backward_links(steps, shape), w.data_ptr<bool>(), s.count, x.device());
  const Tiles tiles = make_tiles(shape);
  at::Tensor parent = at::empty(input.sizes(), x.options().dtype(at::kInt));
  int32_t* P = parent.data_ptr<int32_t>();
  union_tiles<int32_t>(voxels, P, tiles, links.links, s.slices, stream);
  at::Tensor seeded = at::zeros(input.sizes(), x.options().dtype(at::kByte));
  with_fixed_rank(tiles.rank, [&](auto rank) {
    cuda::launch<seed_kernel<decltype(rank)::value>>(tile_grid(tiles, s.slices), kThreads, stream, voxels, P,
                                                     seeded.data_ptr<uint8_t>(), tiles, links.links,
                                                     border || fill, s.slices);
  });
  const int64_t chunks = (shape.numel + kChunk - 1) / kChunk;
  cuda::launch<finish_kernel>(chunk_grid(chunks, s.slices), kChunk, stream, voxels, P,
                              seeded.data_ptr<uint8_t>(), out.data_ptr<bool>(),
                              static_cast<int32_t>(shape.numel), s.slices);
  return out;
}

at::Tensor propagate_cuda(const at::Tensor& input, const std::optional<at::Tensor>& mask,
                          const at::Tensor& weights, at::IntArrayRef offsets, bool border) {
  return run(input, mask, weights, offsets, border, false);
}

// binary_fill_holes: the complement of the propagation from a true border into ~input.
at::Tensor fill_holes_cuda(const at::Tensor& input, const at::Tensor& weights, at::IntArrayRef offsets) {
  return run(input, std::nullopt, weights, offsets, true, true);
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) {
  m.impl("propagate", &propagate_cuda);
  m.impl("fill_holes", &fill_holes_cuda);
}

}  // namespace morphaug
