// CPU launcher of morphaug::surface_distances: the Euclidean distance from
// listed voxels to the nearest true voxel of a paired slice, searched near
// each voxel instead of a distance transform of the whole slice.
//
// The surface metrics (morphaug/metrics/_surface.py) need the distance
// transform of a surface only at the voxels of the other surface, a few
// percent of the volume. Here the slices are packed into bits, 64 voxels
// of a line to a word (so that a slice stays in cache), and a listed voxel
// visits the lines of its paired slice near it, nearest first (offsets 0, 1,
// -1, 2, -2, ... along each axis but the last), each line giving its true
// voxel nearest along the last axis from the bits of a word or two; it stops
// along an axis once the next line there can no longer beat the best so far. Each candidate is evaluated as
// distance_transform_edt's float32 passes evaluate it (each axis's term added
// in double in axis order, rounded to float32 after each axis, the square
// root taken in float32), so the result is the float32 EDT's, bit for bit:
// the rounding is monotone, so the nearest candidate under this arithmetic is
// the EDT's minimum.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../launch.h"
#include "parallel.h"

namespace morphaug {
namespace {

// Voxel-operations (parallel.h) of a voxel packed and of a listed voxel (a
// few dozen lines visited, at a few ns each).
constexpr int64_t kPackWork = 1, kSourceWork = 64;

// The slices as 3-D (Z, Y, X): spatial ranks 1 and 2 get leading axes of
// size 1 (whose offsets are always 0); each line of X voxels takes `words`
// 64-bit words, voxel i at bit i % 64 of word i / 64.
struct Volume {
  int64_t z, y, x, words;
  double sz, sy, sx;
  int64_t voxels() const { return z * y * x; }
};

// Packs the lines of `mask` (bytes 0 or 1), into `bits`.
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

inline float rounded_term(float before, double offset, double spacing) {
  const double t = offset * spacing;
  return static_cast<float>(static_cast<double>(before) + t * t);
}

// |i - x| for the true voxel i of a packed line nearest to x, or -1 where
// there is none or no nearer word could beat `best` (a word is read only if
// its nearest voxel, `row` plus its offset's term, could).
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
  const int64_t nearest = std::min(below, above);
  return nearest == kNone ? -1 : nearest;
}

// The squared float32 distance (as the EDT rounds it) from voxel (z, y, x) to
// the nearest true voxel of the paired slice packed at `bits`, visiting offsets up to `reach` along z and y. Returns -1 where a
// voxel beyond `reach` might be nearer than the nearest one visited, +inf
// where the slice has no true voxel at all (every line visited).
float nearest_squared(const Volume& v, const uint64_t* bits, int64_t z, int64_t y, int64_t x,
                      int64_t reach) {
  constexpr float kNone = std::numeric_limits<float>::infinity();
  float best = kNone;
  float beyond = kNone;  // a lower bound of the lines beyond reach
  for (int64_t dz = 0;; ++dz) {
    if (z - dz < 0 && z + dz >= v.z) break;  // every plane visited
    const float plane = rounded_term(0.0f, static_cast<double>(dz), v.sz);
    if (plane >= best) break;  // no farther plane can be nearer
    if (dz > reach) {
      beyond = std::min(beyond, plane);
      break;
    }
    for (const int64_t zz : {z - dz, z + dz}) {
      if (zz < 0 || zz >= v.z || (dz == 0 && zz != z)) continue;
      const uint64_t* rows = bits + zz * v.y * v.words;
      for (int64_t dy = 0;; ++dy) {
        if (y - dy < 0 && y + dy >= v.y) break;
        const float row = rounded_term(plane, static_cast<double>(dy), v.sy);
        if (row >= best) break;
        if (dy > reach) {
          beyond = std::min(beyond, row);
          break;
        }
        for (const int64_t yy : {y - dy, y + dy}) {
          if (yy < 0 || yy >= v.y || (dy == 0 && yy != y)) continue;
          const int64_t offset = nearest_in_line(rows + yy * v.words, v.words, x, row, best, v.sx);
          if (offset < 0) continue;
          const float candidate = rounded_term(row, static_cast<double>(offset), v.sx);
          if (candidate < best) best = candidate;
        }
      }
    }
  }
  return best <= beyond ? best : -1.0f;
}

at::Tensor surface_distances_cpu(const at::Tensor& surfaces, const at::Tensor& sources,
                                 std::optional<at::ArrayRef<double>> sampling, int64_t reach) {
  check_mask(surfaces, "surface_distances");
  const int64_t rank = surfaces.dim() - 2;
  TORCH_CHECK(rank <= 3, "morphaug::surface_distances: at most 3 spatial axes, got ", rank);
  TORCH_CHECK(surfaces.size(0) % 2 == 0, "morphaug::surface_distances: the batch of surfaces must "
              "hold pairs (an even size), got ", surfaces.size(0));
  TORCH_CHECK(sources.scalar_type() == at::kLong && sources.dim() == 1,
              "morphaug::surface_distances: sources must be a 1-D int64 tensor, got ",
              sources.scalar_type(), " of shape ", sources.sizes());
  TORCH_CHECK(sources.device() == surfaces.device(),
              "morphaug::surface_distances: sources must be on the device of surfaces");
  TORCH_CHECK(reach >= 0, "morphaug::surface_distances: reach must be >= 0, got ", reach);
  double spacing[3] = {1.0, 1.0, 1.0};
  if (sampling.has_value()) {
    TORCH_CHECK(static_cast<int64_t>(sampling->size()) == rank,
                "morphaug::surface_distances: sampling must have one value per spatial axis (", rank,
                "), got ", sampling->size());
    for (int64_t k = 0; k < rank; ++k) {
      const double s = (*sampling)[k];
      TORCH_CHECK(s > 0.0 && s < INFINITY,
                  "morphaug::surface_distances: sampling must be positive and finite, got ", s);
      spacing[3 - rank + k] = s;
    }
  }
  int64_t size[3] = {1, 1, 1};
  for (int64_t k = 0; k < rank; ++k) size[3 - rank + k] = surfaces.size(2 + k);
  const Volume v{size[0], size[1], size[2], (size[2] + 63) / 64, spacing[0], spacing[1], spacing[2]};
  const int64_t slices = surfaces.size(0) * surfaces.size(1), voxels = v.voxels();
  const int64_t half = slices / 2;

  const at::Tensor mask = surfaces.contiguous();
  const at::Tensor listed = sources.contiguous();
  const int64_t* source = listed.data_ptr<int64_t>();
  const int64_t count = listed.numel();
  for (int64_t k = 0; k < count; ++k) {
    TORCH_CHECK(source[k] >= 0 && source[k] < slices * voxels,
                "morphaug::surface_distances: sources must index voxels of surfaces (0 to ",
                slices * voxels - 1, "), got ", source[k]);
  }
  at::Tensor distances = at::empty({count}, surfaces.options().dtype(at::kFloat));
  if (count == 0) return distances;
  const int64_t lines = slices * v.z * v.y;
  std::vector<uint64_t> packed(lines * v.words);
  pack_lines(reinterpret_cast<const uint8_t*>(mask.data_ptr<bool>()), lines, v, packed.data());
  const uint64_t* bits = packed.data();
  // Whether each slice has a true voxel.
  std::vector<uint8_t> occupied(slices, 0);
  for (int64_t slice = 0; slice < slices; ++slice) {
    const int64_t per_slice = v.z * v.y * v.words;
    for (int64_t w = 0; w < per_slice && !occupied[slice]; ++w) occupied[slice] = bits[slice * per_slice + w] != 0;
  }
  float* out = distances.data_ptr<float>();
  parallel_over(count, kSourceWork, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t slice = source[k] / voxels, voxel = source[k] % voxels;
      const int64_t target = slice < half ? slice + half : slice - half;
      const int64_t x = voxel % v.x, y = voxel / v.x % v.y, z = voxel / (v.x * v.y);
      if (!occupied[target]) {
        out[k] = std::numeric_limits<float>::infinity();
        continue;
      }
      const float squared = nearest_squared(v, bits + target * v.z * v.y * v.words, z, y, x, reach);
      out[k] = squared < 0.0f ? -1.0f : std::sqrt(squared);
    }
  });
  return distances;
}

}  // namespace

TORCH_LIBRARY_IMPL(morphaug, CPU, m) { m.impl("surface_distances", &surface_distances_cpu); }

}  // namespace morphaug
