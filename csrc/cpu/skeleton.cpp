// CPU launcher of morphaug::skeletonize_lee: scikit-image's 3-D skeletonize
// (Lee, Kashyap and Chu's thinning, method="lee") of every slice, bit for bit.
//
// The algorithm is sequential: per border direction (scikit-image's order W,
// E, S, N, U, B; U and B skipped for slices one plane deep), the foreground
// voxels of that border that are simple, Euler invariant and not end points
// are listed in raster order, then re-checked one by one (simple in the
// image as it is now) and deleted; this repeats until a whole round of
// directions deletes nothing. scikit-image scans every voxel for each
// direction; here only the surface is (the foreground voxels with a
// background face neighbour, the only ones that can be border points), kept
// in a list in raster order (the same order: compacted as voxels go, with
// the voxels they uncover merged in), so a round costs the surface, not the
// volume. Slices run in parallel.
//
// A neighbourhood is a 27-bit code, bit 9 (dz + 1) + 3 (dy + 1) + (dx + 1)
// for the neighbour at offset (dz, dy, dx), the centre's bit (13) clear.
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../launch.h"
#include "launchers.h"
#include "fresh.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr uint32_t kFull = (uint32_t{1} << 27) - 1;

constexpr int bit_of(int dz, int dy, int dx) { return 9 * (dz + 1) + 3 * (dy + 1) + (dx + 1); }

// The bits of the positions at `side` (-1 or 1) along `axis` (0: z, 1: y, 2: x).
constexpr uint32_t side_bits(int axis, int side) {
  uint32_t bits = 0;
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx)
        if ((axis == 0 ? dz : axis == 1 ? dy : dx) == side) bits |= uint32_t{1} << bit_of(dz, dy, dx);
  return bits;
}

// Per axis (z, y, x): the bit shift of one step along it, and the bits that a
// step up may not enter (the lowest positions along it) nor a step down (the
// highest).
constexpr int kShift[3] = {9, 3, 1};
constexpr uint32_t kUp[3] = {kFull & ~side_bits(0, -1), kFull & ~side_bits(1, -1), kFull & ~side_bits(2, -1)};
constexpr uint32_t kDown[3] = {~side_bits(0, 1), ~side_bits(1, 1), ~side_bits(2, 1)};

// `bits` grown by one step to the 26 neighbours, inside the 3 x 3 x 3 code
// (separable: one step along each axis in turn).
inline uint32_t dilate(uint32_t bits) {
  for (int axis = 0; axis < 3; ++axis) {
    bits |= ((bits << kShift[axis]) & kUp[axis]) | ((bits >> kShift[axis]) & kDown[axis]);
  }
  return bits;
}

// At most one 26-connected component among the foreground neighbours: grown
// from the lowest one until it stops growing.
inline bool connected(uint32_t code) {
  uint32_t reach = code & (~code + 1);
  while (true) {
    const uint32_t grown = dilate(reach) & code;
    if (grown == reach) return reach == code;
    reach = grown;
  }
}

struct Slice {
  uint8_t* image;         // the padded slice, 0 / 1
  int64_t offsets[26];    // of the neighbours, in the order of kBits
  int64_t faces[6];       // the border directions' face neighbours, in scikit-image's order
  int directions;         // 4 for a slice one plane deep, else 6
};

struct Tables {
  int bits[26];           // code bit of each neighbour
  int octants[8][7];      // code bits of each octant's corners 1 .. 7
  const int64_t* euler;   // 128 Euler changes, by octant code
};

inline uint32_t code_at(const Slice& s, const Tables& t, int64_t at) {
  uint32_t code = 0;
  for (int k = 0; k < 26; ++k) code |= uint32_t{s.image[at + s.offsets[k]]} << t.bits[k];
  return code;
}

inline bool euler_invariant(uint32_t code, const Tables& t) {
  int64_t change = 0;
  for (int o = 0; o < 8; ++o) {
    int octant = 0;
    for (int k = 0; k < 7; ++k) octant |= ((code >> t.octants[o][k]) & 1) << k;
    change += t.euler[octant];
  }
  return change == 0;
}

// The surface: the foreground voxels with a background face neighbour, in
// raster order; `listed` marks them. Only they can be border points.
struct Surface {
  std::vector<int64_t> voxels, fresh;
  std::vector<uint8_t> listed;

  void add(int64_t at) {
    if (!listed[at]) {
      listed[at] = 1;
      fresh.push_back(at);
    }
  }
  // Drops the deleted voxels and merges in the fresh ones, in raster order.
  void update(const uint8_t* image) {
    size_t kept = 0;
    for (const int64_t at : voxels)
      if (image[at]) voxels[kept++] = at;
    voxels.resize(kept);
    std::sort(fresh.begin(), fresh.end());
    const size_t middle = voxels.size();
    voxels.insert(voxels.end(), fresh.begin(), fresh.end());
    std::inplace_merge(voxels.begin(), voxels.begin() + middle, voxels.end());
    fresh.clear();
  }
};

void thin_slice(const Slice& s, const Tables& t, Surface& surface) {
  std::vector<int64_t> candidates;
  int unchanged = 0;
  while (unchanged < s.directions) {
    unchanged = 0;
    for (int d = 0; d < s.directions; ++d) {
      candidates.clear();
      for (const int64_t at : surface.voxels) {
        if (s.image[at + s.faces[d]] != 0) continue;
        const uint32_t code = code_at(s, t, at);
        if (__builtin_popcount(code) == 1 || !euler_invariant(code, t) || !connected(code)) continue;
        candidates.push_back(at);
      }
      bool changed = false;
      for (const int64_t at : candidates) {
        if (!connected(code_at(s, t, at))) continue;
        s.image[at] = 0;
        surface.listed[at] = 0;
        for (const int64_t face : s.faces)
          if (s.image[at + face]) surface.add(at + face);
        changed = true;
      }
      if (changed) {
        surface.update(s.image);
      } else {
        ++unchanged;
      }
    }
  }
}

}  // namespace

at::Tensor skeletonize_lee_cpu(const at::Tensor& mask, at::IntArrayRef euler_changes) {
  check_mask(mask, "skeletonize_lee");
  TORCH_CHECK(mask.dim() == 5, "morphaug::skeletonize_lee: expected (B, C, D, H, W), got shape ", mask.sizes());
  TORCH_CHECK(euler_changes.size() == 128, "morphaug::skeletonize_lee: expected 128 euler_changes, got ",
              euler_changes.size());
  at::Tensor out = fresh_empty(mask.sizes(), mask.options());
  if (mask.numel() == 0) return out;
  const at::Tensor m = mask.contiguous();
  const int64_t depth = mask.size(2), height = mask.size(3), width = mask.size(4);
  const int64_t pw = width + 2, ph = height + 2, plane = ph * pw, padded = (depth + 2) * plane;
  const int64_t voxels = depth * height * width, slices = mask.size(0) * mask.size(1);

  Tables t{};
  t.euler = euler_changes.data();
  int k = 0;
  Slice shape{};
  for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx) {
        if (dz == 0 && dy == 0 && dx == 0) continue;
        t.bits[k] = bit_of(dz, dy, dx);
        shape.offsets[k++] = dz * plane + dy * pw + dx;
      }
  // the corners of the Euler table's 2 x 2 x 2 window as (z, y, x) offsets (morphaug/measure/_euler.py),
  // reflected into each octant of signs (sz, sy, sx)
  constexpr int kCorner[8][3] = {{0, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 1, 1},
                                 {1, 0, 0}, {1, 1, 0}, {1, 0, 1}, {1, 1, 1}};
  for (int o = 0; o < 8; ++o) {
    const int sz = (o & 4) ? 1 : -1, sy = (o & 2) ? 1 : -1, sx = (o & 1) ? 1 : -1;
    for (int c = 1; c < 8; ++c)
      t.octants[o][c - 1] = bit_of(kCorner[c][0] * sz, kCorner[c][1] * sy, kCorner[c][2] * sx);
  }
  const int64_t faces[6] = {-pw, pw, 1, -1, plane, -plane};  // W (r-1), E (r+1), S (c+1), N (c-1), U, B
  for (int f = 0; f < 6; ++f) shape.faces[f] = faces[f];
  shape.directions = depth == 1 ? 4 : 6;

  const bool* source = m.data_ptr<bool>();
  bool* target = out.data_ptr<bool>();
  parallel_over(slices, voxels * 8, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> image(padded);
    Surface surface;
    for (int64_t slice = begin; slice < end; ++slice) {
      std::fill(image.begin(), image.end(), 0);
      surface.listed.assign(padded, 0);
      surface.voxels.clear();
      const bool* in = source + slice * voxels;
      for (int64_t z = 0; z < depth; ++z)
        for (int64_t y = 0; y < height; ++y)
          for (int64_t x = 0; x < width; ++x)
            image[(z + 1) * plane + (y + 1) * pw + x + 1] = in[(z * height + y) * width + x];
      Slice s = shape;
      s.image = image.data();
      for (int64_t at = 0; at < padded; ++at) {
        if (!image[at]) continue;
        for (const int64_t face : s.faces) {
          if (!image[at + face]) {
            surface.listed[at] = 1;
            surface.voxels.push_back(at);
            break;
          }
        }
      }
      thin_slice(s, t, surface);
      bool* result = target + slice * voxels;
      for (int64_t z = 0; z < depth; ++z)
        for (int64_t y = 0; y < height; ++y)
          for (int64_t x = 0; x < width; ++x)
            result[(z * height + y) * width + x] = image[(z + 1) * plane + (y + 1) * pw + x + 1] != 0;
    }
  });
  return out;
}

}  // namespace morphaug
