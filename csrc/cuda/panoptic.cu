// CUDA launcher of morphaug::panoptic_confusion (core/panoptic.h): three
// launches after the tables' fills, no host read.
//  - count_kernel: a block per kChunk voxels of a slice, the slices along y.
//    Each warp reads 32 neighbouring voxels, and the first lane of each run
//    of equal ids (of equal pairs) finds the id's slot in its slice's table,
//    claiming it with atomicCAS where it is new, and adds the run's length to
//    the slot's count: the areas and the intersections.
//  - match_kernel: a thread per pair slot: the pairs that match, counted and
//    their IoUs summed per slice.
//  - confusion_kernel: a thread per slice: tp, fp, fn and the sum.
// A slice's tables hold twice the ids (pairs) it can hold, so they are at
// most half full: 2 slots per voxel each, 72 bytes per voxel for the three
// (8-byte keys, int32 counts); 8 and 16-bit ids take 2 * 2^8 or 2 * 2^16
// slots per id table (and their square per pair table) where that is less.
#include <ATen/ops/zeros.h>

#include <algorithm>

#include "../panoptic_setup.h"
#include "grid.cuh"

namespace morphaug {
namespace {

constexpr int kItems = 8;                  // voxels per thread
constexpr int kChunk = kThreads * kItems;  // voxels per block
constexpr unsigned kFull = 0xffffffffu;
constexpr int kPred = 0, kRef = 1, kPair = 2;  // the tables, in this order

// Per slice a table of ids_capacity slots for the pred ids, one for the ref
// ids, then one of pairs_capacity slots for the pairs.
struct Tables {
  unsigned long long* keys;  // the tables' keys, 0 for an empty slot
  int32_t* counts;           // their counts: areas, areas, intersections
  int32_t* totals;           // (slices, 3): pred instances, ref instances, matched pairs
  unsigned long long* sums;  // (slices): the matched IoUs, in iou_units
  int64_t slices;
  uint32_t ids_capacity, pairs_capacity;

  __device__ uint32_t capacity(int table) const { return table == kPair ? pairs_capacity : ids_capacity; }
  __device__ int64_t row(int table, int64_t slice) const {
    return table == kPair ? 2 * slices * ids_capacity + slice * pairs_capacity
                          : (table * slices + slice) * ids_capacity;
  }
};

// The slot of `key` (nonzero) among the `capacity` slots of `keys`, claimed
// where the key is new (*claimed then true). A slot's key changes once, from
// 0, so a plain read that sees another key is final.
__device__ __forceinline__ uint32_t find_slot(unsigned long long* keys, uint32_t capacity, uint64_t key,
                                              bool* claimed) {
  for (uint32_t s = panoptic_home(key, capacity);; s = s + 1 == capacity ? 0 : s + 1) {
    unsigned long long held = keys[s];
    if (held == 0) {
      held = atomicCAS(keys + s, 0ull, static_cast<unsigned long long>(key));
      *claimed = held == 0;
      if (held == 0) return s;
    }
    if (held == key) return s;
  }
}

// Called by every lane of a full warp with its voxel's key (0: none): the
// first lane of each run of equal nonzero keys counts the run in `table` of
// `slice` (and a new key in *total, where given). Returns the slot of the
// lane's key.
__device__ __forceinline__ uint32_t tally(const Tables& t, int table, int64_t slice, uint64_t key, int32_t* total) {
  const unsigned lane = threadIdx.x % 32;
  const uint64_t before = __shfl_up_sync(kFull, key, 1);
  const unsigned heads = __ballot_sync(kFull, lane == 0 || key != before);
  const unsigned upto = lane == 31 ? kFull : (2u << lane) - 1u;  // lanes 0 .. lane
  uint32_t slot = 0;
  if ((heads >> lane & 1u) && key != 0) {
    const unsigned after = heads & ~upto;
    const int length = (after ? __ffs(after) - 1 : 32) - static_cast<int>(lane);
    const int64_t row = t.row(table, slice);
    bool claimed = false;
    slot = find_slot(t.keys + row, t.capacity(table), key, &claimed);
    atomicAdd(t.counts + row + slot, length);
    if (claimed && total != nullptr) atomicAdd(total, 1);
  }
  return __shfl_sync(kFull, slot, 31 - __clz(heads & upto));
}

template <typename T>
__global__ void __launch_bounds__(kThreads) count_kernel(const T* pred, const T* ref, Tables t, uint32_t numel) {
  const uint32_t warp_first = blockIdx.x * kChunk + threadIdx.x / 32 * 32;  // below 2**31 + kChunk
  for (int64_t slice = blockIdx.y; slice < t.slices; slice += gridDim.y) {
    const int64_t offset = slice * numel;
    int32_t* totals = t.totals + 3 * slice;
    for (int k = 0; k < kItems; ++k) {
      if (warp_first + k * kThreads >= numel) break;  // the warp as one
      const uint32_t i = warp_first + k * kThreads + threadIdx.x % 32;
      const bool inside = i < numel;
      const uint64_t p = inside ? instance_key(pred[offset + i]) : 0;
      const uint64_t r = inside ? instance_key(ref[offset + i]) : 0;
      const uint32_t sp = tally(t, kPred, slice, p, totals);
      const uint32_t sr = tally(t, kRef, slice, r, totals + 1);
      tally(t, kPair, slice, p != 0 && r != 0 ? pair_key(sp, sr) : 0, nullptr);
    }
  }
}

__global__ void __launch_bounds__(kThreads) match_kernel(Tables t, float threshold) {
  const uint32_t step = gridDim.x * blockDim.x;
  for (int64_t slice = blockIdx.y; slice < t.slices; slice += gridDim.y) {
    const int64_t pairs = t.row(kPair, slice), preds = t.row(kPred, slice), refs = t.row(kRef, slice);
    for (uint32_t s = blockIdx.x * blockDim.x + threadIdx.x; s < t.pairs_capacity; s += step) {
      const uint64_t key = t.keys[pairs + s];
      float iou;
      if (key != 0 && panoptic_match(t.counts[pairs + s], t.counts[preds + pair_pred(key)],
                                     t.counts[refs + pair_ref(key)], threshold, &iou)) {
        atomicAdd(t.totals + 3 * slice + 2, 1);
        atomicAdd(t.sums + slice, static_cast<unsigned long long>(iou_units(iou)));
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads) confusion_kernel(Tables t, float* out) {
  for (int64_t slice = grid_start(); slice < t.slices; slice += grid_step()) {
    const int32_t* totals = t.totals + 3 * slice;
    const int32_t tp = totals[2];
    out[4 * slice] = static_cast<float>(tp);
    out[4 * slice + 1] = static_cast<float>(totals[0] - tp);
    out[4 * slice + 2] = static_cast<float>(totals[1] - tp);
    out[4 * slice + 3] = iou_sum(static_cast<int64_t>(t.sums[slice]));
  }
}

at::Tensor panoptic_confusion_cuda(const at::Tensor& pred, const at::Tensor& ref, double threshold) {
  const cuda::DeviceGuard guard(pred.device());
  const PanopticSetup setup = panoptic_setup(pred, ref, threshold);
  if (setup.slices == 0) return setup.out;
  // twice the ids and pairs a slice can hold: its voxels, or the ids of 8 and 16-bit dtypes
  const int64_t voxels = 2 * setup.slice;
  const bool narrow = pred.element_size() <= 2;
  const int64_t ids = narrow ? std::min(voxels, int64_t{2} << (8 * pred.element_size())) : voxels;
  const int64_t pairs = narrow ? std::min(voxels, ids * ids) : voxels;
  const int64_t slots = setup.slices * (2 * ids + pairs);
  // the keys, then the sums; the counts, then the totals
  const at::Tensor keys = at::zeros({slots + setup.slices}, pred.options().dtype(at::kLong));
  const at::Tensor counts = at::zeros({slots + 3 * setup.slices}, pred.options().dtype(at::kInt));
  auto* key_data = reinterpret_cast<unsigned long long*>(keys.data_ptr<int64_t>());
  const Tables t{key_data, counts.data_ptr<int32_t>(), counts.data_ptr<int32_t>() + slots, key_data + slots,
                 setup.slices, static_cast<uint32_t>(ids), static_cast<uint32_t>(pairs)};
  const cudaStream_t stream = cuda::current_stream();
  const unsigned rows = static_cast<unsigned>(std::min<int64_t>(setup.slices, kMaxBlocks));
  if (setup.slice > 0) {
    dispatch_ids(setup.pred, "panoptic_confusion", [&](auto type) {
      using T = decltype(type);
      cuda::launch<count_kernel<T>>(dim3(static_cast<unsigned>((setup.slice + kChunk - 1) / kChunk), rows),
                                    kThreads, stream, static_cast<const T*>(setup.pred.const_data_ptr()),
                                    static_cast<const T*>(setup.ref.const_data_ptr()), t,
                                    static_cast<uint32_t>(setup.slice));
    });
    cuda::launch<match_kernel>(dim3(static_cast<unsigned>(blocks_for(pairs)), rows), kThreads, stream, t,
                               setup.threshold);
  }
  cuda::launch<confusion_kernel>(dim3(static_cast<unsigned>(blocks_for(setup.slices))), kThreads, stream, t,
                                 setup.out.data_ptr<float>());
  return setup.out;
}

}  // namespace

MORPHAUG_CUDA_KERNELS(m) { m.impl("panoptic_confusion", &panoptic_confusion_cuda); }

}  // namespace morphaug
