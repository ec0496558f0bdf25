// CPU launcher of morphaug::surface_distance_lists: MONAI's surface distance
// lists of a prediction and a reference, each surface voxel with its
// Euclidean distance to the other one's surface in the same slice, searched
// near the voxel instead of read from a distance transform of the slice.
//
// The surface metrics (morphaug/metrics/_surface.py) need the distance
// transform of a surface only at the voxels of the other surface, a few
// percent of the volume. Here the masks are packed into bits, 64 voxels of a
// line to a word (so that a slice stays in cache), their surfaces (the true
// voxels with a face neighbour false or outside the slice: MONAI's
// mask ^ binary_erosion(mask)) are taken word by word and listed in raster
// order, and a listed voxel visits the lines of its paired surface near it,
// nearest first (line offsets along the axes but the last, ordered by their
// distance), each line giving its true voxel nearest along the last axis from
// the bits of a word or two; it stops once the next line can no longer beat
// the best so far, which starts from the voxel that was nearest to the
// previous listed voxel (its neighbour, mostly). Each candidate is evaluated
// as distance_transform_edt's float32 passes evaluate it (each axis's term
// added in double in axis order, rounded to float32 after each axis, the
// square root taken in float32), so the result is the float32 EDT's, bit for
// bit: the rounding is monotone, so the nearest candidate under this
// arithmetic is the EDT's minimum. The work grows with the square of the
// distances: the searches of the voxels measuring to one slice stop once
// they have visited `budget` line offsets per voxel of the slice, and leave
// the voxels left to the slice's distance transform (-1), as they do the
// voxels whose nearest surface voxel may lie beyond `reach`.
#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../launch.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {
namespace {

// Voxel-operations (parallel.h) of a voxel packed, of a word of a surface
// taken and listed, and of a listed voxel (a few dozen lines visited, at
// about 10 ns each).
constexpr int64_t kPackWork = 1, kWordWork = 4, kSourceWork = 128;

// The slices as 3-D (Z, Y, X): spatial ranks 1 and 2 get leading axes of
// size 1 (whose offsets are always 0, and which have no face neighbours);
// each line of X voxels takes `words` 64-bit words, voxel i at bit i % 64 of
// word i / 64, the bits past X zero.
struct Volume {
  int64_t rank, z, y, x, words;
  double sz, sy, sx;
  int64_t lines() const { return z * y; }  // per slice
};

// Packs the lines of `mask` (bytes 0 or 1) into `bits`.
void pack_lines(const uint8_t* mask, int64_t lines, const Volume& v, uint64_t* bits) {
  parallel_over(lines, v.x * kPackWork, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      const uint8_t* m = mask + line * v.x;
      uint64_t* out = bits + line * v.words;
      for (int64_t w = 0; w < v.words; ++w) {
        const int64_t first = w * 64, last = std::min(first + 64, v.x);
        uint64_t word = 0;
        int64_t i = first;
        // 8 bytes at a time: the multiplication moves bit 0 of byte j to bit 56 + j
        for (; i + 8 <= last; i += 8) {
          uint64_t chunk;
          std::memcpy(&chunk, m + i, 8);
          word |= ((chunk * 0x0102040810204080ULL) >> 56) << (i - first);
        }
        for (; i < last; ++i) word |= static_cast<uint64_t>(m[i]) << (i - first);
        out[w] = word;
      }
    }
  });
}

// The surface of each packed line of `masks` into `surfaces`: the true voxels
// with a face neighbour along one of the `rank` axes that is false or
// outside the slice (MONAI's and SciPy's binary_erosion: the cross, border
// 0). Returns how many voxels each line's surface holds.
std::vector<int64_t> surface_lines(const uint64_t* masks, int64_t lines, const Volume& v, uint64_t* surfaces) {
  const int64_t line_step = v.words, plane_step = v.y * v.words;
  std::vector<int64_t> counts(lines);
  parallel_over(lines, v.words * kWordWork, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      const int64_t y = line % v.y, z = line / v.y % v.z;
      const uint64_t* m = masks + line * v.words;
      uint64_t* out = surfaces + line * v.words;
      int64_t count = 0;
      for (int64_t w = 0; w < v.words; ++w) {
        const uint64_t left = (m[w] << 1) | (w > 0 ? m[w - 1] >> 63 : 0);
        const uint64_t right = (m[w] >> 1) | (w + 1 < v.words ? m[w + 1] << 63 : 0);
        uint64_t inner = m[w] & left & right;
        if (v.rank >= 2) {
          inner &= (y > 0 ? m[w - line_step] : 0) & (y + 1 < v.y ? m[w + line_step] : 0);
        }
        if (v.rank == 3) {
          inner &= (z > 0 ? m[w - plane_step] : 0) & (z + 1 < v.z ? m[w + plane_step] : 0);
        }
        out[w] = m[w] & ~inner;
        count += __builtin_popcountll(out[w]);
      }
      counts[line] = count;
    }
  });
  return counts;
}

// The flat index (line * X + i) of every true voxel of the first `lines`
// packed lines, in raster order, from `first` (each line's first position).
void list_voxels(const uint64_t* bits, int64_t lines, const Volume& v, const std::vector<int64_t>& first,
                 int64_t* out) {
  parallel_over(lines, v.words * kWordWork, [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      int64_t* next = out + first[line];
      for (int64_t w = 0; w < v.words; ++w) {
        for (uint64_t word = bits[line * v.words + w]; word; word &= word - 1) {
          *next++ = line * v.x + w * 64 + __builtin_ctzll(word);
        }
      }
    }
  });
}

inline float rounded_term(float before, double offset, double spacing) {
  const double t = offset * spacing;
  return static_cast<float>(static_cast<double>(before) + t * t);
}

// The true voxel i of a packed line nearest to x (the lower one of two as
// near), or -1 where there is none or no word could beat `best` (a word is
// read only if its nearest voxel, `row` plus its offset's term, could).
inline int64_t nearest_in_line(const uint64_t* words, int64_t n_words, int64_t x, float row, float best,
                               double sx) {
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  const auto may_beat = [&](int64_t offset) {
    return rounded_term(row, static_cast<double>(offset), sx) < best;
  };
  const int64_t w = x >> 6;
  const int bit = static_cast<int>(x & 63);
  const uint64_t low = words[w] & ((uint64_t{2} << bit) - 1);  // bits 0 .. bit (all when bit = 63)
  const uint64_t high = words[w] >> bit;                        // bits bit .. 63, shifted down
  int64_t below = low ? x - (w * 64 + 63 - __builtin_clzll(low)) : kNone;
  int64_t above = high ? __builtin_ctzll(high) : kNone;
  for (int64_t k = w - 1; below == kNone && k >= 0; --k) {
    const int64_t gap = x - (k * 64 + 63);
    if (gap >= above || !may_beat(gap)) break;
    if (words[k]) below = x - (k * 64 + 63 - __builtin_clzll(words[k]));
  }
  for (int64_t k = w + 1; above == kNone && k < n_words; ++k) {
    const int64_t gap = k * 64 - x;
    if (gap >= below || !may_beat(gap)) break;
    if (words[k]) above = k * 64 + __builtin_ctzll(words[k]) - x;
  }
  if (below == kNone && above == kNone) return -1;
  return below <= above ? x - below : x + above;
}

// A line offset (dz, dy >= 0) and its term, the rounded float32 sum of the
// axes' terms that every voxel of its lines adds to its term along x.
struct LineOffset {
  int64_t dz, dy;
  float row;
};

// The line offsets within `reach` (and the volume), nearest first: a voxel
// visits them in this order until the next one cannot beat its best.
std::vector<LineOffset> line_offsets(const Volume& v, int64_t reach) {
  std::vector<LineOffset> offsets;
  for (int64_t dz = 0; dz <= std::min(reach, v.z - 1); ++dz) {
    const float plane = rounded_term(0.0f, static_cast<double>(dz), v.sz);
    for (int64_t dy = 0; dy <= std::min(reach, v.y - 1); ++dy)
      offsets.push_back({dz, dy, rounded_term(plane, static_cast<double>(dy), v.sy)});
  }
  std::stable_sort(offsets.begin(), offsets.end(),
                   [](const LineOffset& a, const LineOffset& b) { return a.row < b.row; });
  return offsets;
}

// The term of the nearest line beyond `reach` (+inf where the volume has none).
float beyond_reach(const Volume& v, int64_t reach) {
  float beyond = std::numeric_limits<float>::infinity();
  if (reach + 1 < v.z) beyond = rounded_term(0.0f, static_cast<double>(reach + 1), v.sz);
  if (reach + 1 < v.y) beyond = std::min(beyond, rounded_term(0.0f, static_cast<double>(reach + 1), v.sy));
  return beyond;
}

// A voxel of a slice (z, y, x).
struct Voxel {
  int64_t z, y, x;
};

// The squared float32 distance from `p` to `q`, as the EDT's passes round it.
inline float squared_distance(const Volume& v, const Voxel& p, const Voxel& q) {
  const float plane = rounded_term(0.0f, static_cast<double>(q.z - p.z), v.sz);
  return rounded_term(rounded_term(plane, static_cast<double>(q.y - p.y), v.sy), static_cast<double>(q.x - p.x),
                      v.sx);
}

// The squared float32 distance (as the EDT rounds it) from `p` to the nearest
// true voxel of the paired slice packed at `bits` that lies on one of
// `offsets`' lines (line_offsets), or to the voxel `nearest` when that one is
// nearer (at squared distance `best`; +inf: none), and writes that voxel to
// `nearest`; +inf when there is none. It visits the offsets while they may
// beat the best so far, and adds how many it visited to `visited`.
float nearest_squared(const Volume& v, const uint64_t* bits, const std::vector<LineOffset>& offsets,
                      const Voxel& p, float best, Voxel& nearest, int64_t& visited) {
  for (const LineOffset& o : offsets) {
    if (o.row >= best) break;  // no later line can be nearer
    ++visited;
    for (const int64_t zz : {p.z - o.dz, p.z + o.dz}) {
      if (zz < 0 || zz >= v.z || (o.dz == 0 && zz != p.z)) continue;
      for (const int64_t yy : {p.y - o.dy, p.y + o.dy}) {
        if (yy < 0 || yy >= v.y || (o.dy == 0 && yy != p.y)) continue;
        const int64_t xx = nearest_in_line(bits + (zz * v.y + yy) * v.words, v.words, p.x, o.row, best, v.sx);
        if (xx < 0) continue;
        const float candidate = rounded_term(o.row, static_cast<double>(xx - p.x), v.sx);
        if (candidate < best) {
          best = candidate;
          nearest = {zz, yy, xx};
        }
      }
    }
  }
  return best;
}

// Offsets a chunk visits for one target slice before it takes them from the
// slice's budget (an atomic shared by the threads).
constexpr int64_t kBudgetBatch = 4096;

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> surface_distance_lists_cpu(
    const at::Tensor& pred, const at::Tensor& ref, std::optional<at::ArrayRef<double>> sampling, int64_t reach,
    double budget, bool symmetric) {
  check_mask(pred, "surface_distance_lists");
  check_mask(ref, "surface_distance_lists");
  TORCH_CHECK(pred.sizes() == ref.sizes(), "morphaug::surface_distance_lists: pred and ref must have the same "
              "shape, got ", pred.sizes(), " and ", ref.sizes());
  TORCH_CHECK(pred.device() == ref.device(), "morphaug::surface_distance_lists: pred and ref must be on one device");
  const int64_t rank = pred.dim() - 2;
  TORCH_CHECK(rank <= 3, "morphaug::surface_distance_lists: at most 3 spatial axes, got ", rank);
  TORCH_CHECK(reach >= 0, "morphaug::surface_distance_lists: reach must be >= 0, got ", reach);
  TORCH_CHECK(budget >= 0, "morphaug::surface_distance_lists: budget must be >= 0, got ", budget);
  double spacing[3] = {1.0, 1.0, 1.0};
  if (sampling.has_value()) {
    TORCH_CHECK(static_cast<int64_t>(sampling->size()) == rank,
                "morphaug::surface_distance_lists: sampling must have one value per spatial axis (", rank,
                "), got ", sampling->size());
    for (int64_t k = 0; k < rank; ++k) {
      const double s = (*sampling)[k];
      TORCH_CHECK(s > 0.0 && s < INFINITY,
                  "morphaug::surface_distance_lists: sampling must be positive and finite, got ", s);
      spacing[3 - rank + k] = s;
    }
  }
  int64_t size[3] = {1, 1, 1};
  for (int64_t k = 0; k < rank; ++k) size[3 - rank + k] = pred.size(2 + k);
  const Volume v{rank, size[0], size[1], size[2], (size[2] + 63) / 64, spacing[0], spacing[1], spacing[2]};
  // Slices 0 .. half - 1 are pred's, half .. 2 half - 1 ref's.
  const int64_t half = pred.size(0) * pred.size(1), slices = 2 * half;
  const int64_t lines = slices * v.lines(), voxels = v.lines() * v.x;

  // The surfaces, packed, and how many voxels each line and each slice holds.
  std::vector<uint64_t> packed(lines * v.words), surfaces(lines * v.words);
  const at::Tensor inputs[2] = {pred.contiguous(), ref.contiguous()};
  for (int k = 0; k < 2; ++k) {
    pack_lines(reinterpret_cast<const uint8_t*>(inputs[k].data_ptr<bool>()), lines / 2, v,
               packed.data() + k * (lines / 2) * v.words);
  }
  const std::vector<int64_t> per_line = surface_lines(packed.data(), lines, v, surfaces.data());
  at::Tensor counts = at::zeros({2, pred.size(0), pred.size(1)}, pred.options().dtype(at::kLong));
  int64_t* per_slice = counts.data_ptr<int64_t>();
  // The listed lines (every slice's, or pred's) and where each one's voxels go.
  const int64_t listed_lines = (symmetric ? slices : half) * v.lines();
  std::vector<int64_t> first(listed_lines);
  int64_t listed = 0;
  for (int64_t line = 0; line < lines; ++line) {
    per_slice[line / v.lines()] += per_line[line];
    if (line < listed_lines) {
      first[line] = listed;
      listed += per_line[line];
    }
  }
  at::Tensor sources = at::empty({listed}, pred.options().dtype(at::kLong));
  at::Tensor distances = at::empty({listed}, pred.options().dtype(at::kFloat));
  int64_t* source = sources.data_ptr<int64_t>();
  list_voxels(surfaces.data(), listed_lines, v, first, source);

  const uint64_t* bits = surfaces.data();
  const std::vector<LineOffset> offsets = line_offsets(v, reach);
  const float beyond = beyond_reach(v, reach);
  // The offsets left to the searches of each target slice: budget per voxel of the slice (+inf
  // and large budgets: the most a voxel can visit, for every listed voxel).
  const double most = static_cast<double>(offsets.size()) * static_cast<double>(listed);
  const int64_t allowed = static_cast<int64_t>(std::min({budget * static_cast<double>(voxels), most, 9e18}));
  std::vector<std::atomic<int64_t>> left(slices);
  for (auto& slice : left) slice.store(allowed, std::memory_order_relaxed);
  float* out = distances.data_ptr<float>();
  parallel_over(listed, kSourceWork, [&](int64_t begin, int64_t end) {
    // The nearest voxel found for a previous source of the same target slice
    // (seeded: that slice, else -1): a candidate for the next one (its
    // neighbour along x, mostly), so that the search starts from a near bound.
    int64_t seeded = -1, last_target = -1, visited = 0;  // visited: not yet taken from last_target's budget
    Voxel nearest{0, 0, 0};
    for (int64_t k = begin; k < end; ++k) {
      const int64_t slice = source[k] / voxels, voxel = source[k] % voxels;
      const int64_t target = slice < half ? slice + half : slice - half;
      const Voxel p{voxel / (v.x * v.y), voxel / v.x % v.y, voxel % v.x};
      if (target != last_target || visited >= kBudgetBatch) {
        if (last_target >= 0) left[last_target].fetch_sub(visited, std::memory_order_relaxed);
        visited = 0;
        last_target = target;
      }
      if (per_slice[target] == 0) {
        out[k] = std::numeric_limits<float>::infinity();
      } else if (left[target].load(std::memory_order_relaxed) - visited <= 0) {
        out[k] = -1.0f;  // the slice's distance transform costs less than searching on
      } else {
        const float seed = seeded == target ? squared_distance(v, p, nearest) : std::numeric_limits<float>::infinity();
        const float squared =
            nearest_squared(v, bits + target * v.lines() * v.words, offsets, p, seed, nearest, visited);
        if (squared < std::numeric_limits<float>::infinity()) seeded = target;
        // a voxel beyond the offsets' lines (at `beyond` or more) might be nearer
        out[k] = squared <= beyond ? std::sqrt(squared) : -1.0f;
      }
    }
    if (last_target >= 0) left[last_target].fetch_sub(visited, std::memory_order_relaxed);
  });
  return {sources, distances, counts};
}

}  // namespace morphaug
