// CPU launcher of morphaug::distance_bf (core/distance_bf.h). Each slice's
// candidates are listed in raster order (the slices in parallel), their
// coordinates axis by axis; then every voxel of the batch in parallel compares
// itself with them a block at a time: the block's keys in one loop, its
// least key in another (both vectorised, clones.h), and only a block that
// holds a key up to the best so far is scanned for its last such key.
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <vector>

#include "../distance_bf_setup.h"
#include "clones.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr int kBlock = 256;

// A slice's candidates in raster order: coordinate k of candidate j at axis[k][j].
struct Candidates {
  std::vector<int32_t> axis[kBfMaxRank];
  int64_t count = 0;
};

// Advances the C-order coordinates of a slice's voxel to the next voxel.
inline void next_voxel(int32_t* coord, const BfGeometry& g) {
  for (int k = g.rank - 1; k >= 0; --k) {
    if (++coord[k] < g.size[k]) return;
    coord[k] = 0;
  }
}

inline void voxel_coordinates(int64_t p, const BfGeometry& g, int32_t* coord) {
  for (int k = g.rank - 1; k >= 0; --k) {
    coord[k] = static_cast<int32_t>(p % g.size[k]);
    p /= g.size[k];
  }
}

template <int kRank>
Candidates list_candidates(const bool* v, int64_t slice, const BfGeometry& g) {
  Candidates c;
  int32_t coord[kBfMaxRank] = {};
  for (int64_t p = 0; p < slice; ++p, next_voxel(coord, g)) {
    if (!bf_candidate<kRank>(v, p, coord, g)) continue;
    for (int k = 0; k < g.rank; ++k) c.axis[k].push_back(coord[k]);
    ++c.count;
  }
  return c;
}

// keys[i] = the key of (coord, candidate first + i) for i < n; returns their least.
template <int kRank, int kMetric>
MORPHAUG_CPU_CLONES BfKey<kMetric> block_keys(const int32_t* coord, const Candidates& c, int64_t first, int n,
                                              const BfGeometry& g, BfKey<kMetric>* keys) {
  for (int i = 0; i < n; ++i) keys[i] = 0;
  for (int k = 0; k < fixed_rank<kRank>(g.rank); ++k) {
    const int32_t* a = c.axis[k].data() + first;
    const int32_t at = coord[k];
    const double s = g.sampling[k];
    for (int i = 0; i < n; ++i) keys[i] = bf_fold<kMetric>(keys[i], at - a[i], s);
  }
  BfKey<kMetric> least = keys[0];
  for (int i = 1; i < n; ++i) least = std::min(least, keys[i]);
  return least;
}

// Every voxel of every slice, in parallel (the chunks may cross slices).
template <int kRank, int kMetric, typename T>
void distances(const bool* v, const std::vector<Candidates>& candidates, const BfSetup& setup, T* dist,
               int32_t* index) {
  const BfGeometry& g = setup.geometry;
  const int64_t slice = setup.slice, planes = setup.slices * slice;
  int64_t listed = 0;
  for (const Candidates& c : candidates) listed += c.count;
  parallel_over(planes, std::max<int64_t>(1, listed / setup.slices) * g.rank, [&](int64_t begin, int64_t end) {
    int64_t s = begin / slice, p = begin - s * slice;
    int32_t coord[kBfMaxRank];
    voxel_coordinates(p, g, coord);
    BfKey<kMetric> keys[kBlock];
    for (int64_t at = begin; at < end; ++at, next_voxel(coord, g)) {  // the last voxel of a slice wraps to 0
      const Candidates& c = candidates[s];
      const bool foreground = v[at];
      int64_t arg = -1;
      BfKey<kMetric> best = foreground ? bf_unreached_key<kMetric>() : BfKey<kMetric>(0);
      for (int64_t first = 0; foreground && first < c.count; first += kBlock) {
        const int n = static_cast<int>(std::min<int64_t>(kBlock, c.count - first));
        const BfKey<kMetric> least = block_keys<kRank, kMetric>(coord, c, first, n, g, keys);
        if (least > best) continue;
        best = least;
        int i = n - 1;
        while (keys[i] != least) --i;
        arg = first + i;
      }
      dist[at] = bf_distance<kMetric, T>(best, foreground && arg < 0);
      if (index != nullptr) {
        for (int k = 0; k < g.rank; ++k) {
          index[k * planes + at] = !foreground ? coord[k] : arg < 0 ? 0 : c.axis[k][arg];
        }
      }
      if (++p == slice) {
        p = 0;
        ++s;
      }
    }
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> distance_bf_cpu(const at::Tensor& mask, int64_t metric,
                                                   std::optional<at::ArrayRef<double>> sampling,
                                                   bool return_indices, at::ScalarType dtype) {
  const BfSetup setup = bf_setup(mask, metric, sampling, return_indices, dtype);
  if (mask.numel() == 0) return {setup.distances, setup.indices};
  const bool* v = setup.mask.data_ptr<bool>();
  int32_t* index = return_indices ? setup.indices.data_ptr<int32_t>() : nullptr;
  int neighbours = 1;
  for (int k = 0; k < setup.geometry.rank; ++k) neighbours *= 3;
  std::vector<Candidates> candidates(setup.slices);
  with_fixed_rank(setup.geometry.rank, [&](auto rank) {
    constexpr int kRank = decltype(rank)::value;
    parallel_over(setup.slices, setup.slice * neighbours, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) candidates[s] = list_candidates<kRank>(v + s * setup.slice, setup.slice,
                                                                                  setup.geometry);
    });
    dispatch_bf(setup, [&](auto which, auto type) {
      using T = decltype(type);
      distances<kRank, decltype(which)::value, T>(v, candidates, setup, setup.distances.data_ptr<T>(), index);
    });
  });
  return {setup.distances, setup.indices};
}

}  // namespace morphaug
