// CPU launcher of morphaug::skeletonize_lee: scikit-image's 3-D skeletonize
// (Lee, Kashyap and Chu's thinning, method="lee") of every slice, bit for bit.
//
// The algorithm is sequential: per border direction (scikit-image's order W,
// E, S, N, U, B; U and B skipped for slices one plane deep), the foreground
// voxels of that border that are simple, Euler invariant and not end points
// are listed in raster order, then re-checked one by one (simple in the
// image as it is now) and deleted; this repeats until a whole round of
// directions deletes nothing. The tests on one voxel are core/thinning3d.h's.
//
// The slice is held as bits (BitSlice), a row in a few 64-bit words: a
// direction's border points of a row are its words less the neighbouring
// row's (or the row shifted by one voxel), found a word at a time, and a
// neighbourhood code is 9 three-bit reads. A candidate keeps its code: its
// re-check tests connectivity again only when a deletion changed it.
// Slices run in parallel.
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "../core/thinning3d.h"
#include "../launch.h"
#include "launchers.h"
#include "fresh.h"
#include "parallel.h"

namespace morphaug {
namespace {

// A (D, H, W) slice as bits, padded by a zero plane, row and bit on every
// side (so every voxel has 26 neighbours): voxel (z, y, x) is bit x + 1 of
// the `words` words of padded row (z + 1, y + 1).
struct BitSlice {
  int64_t depth, height, width, words, plane;
  std::vector<uint64_t> bits;

  explicit BitSlice(const at::Tensor& mask)
      : depth(mask.size(2)), height(mask.size(3)), width(mask.size(4)), words((width + 2 + 63) / 64),
        plane((height + 2) * words), bits((depth + 2) * plane) {}

  uint64_t* row(int64_t z, int64_t y) { return bits.data() + z * plane + y * words; }

  // 8 bools at a time: byte k of v (0 or 1) lands on bit k of the product's top byte.
  void load(const bool* in) {
    std::fill(bits.begin(), bits.end(), 0);
    for (int64_t z = 0; z < depth; ++z)
      for (int64_t y = 0; y < height; ++y) {
        uint64_t* out = row(z + 1, y + 1);
        const bool* line = in + (z * height + y) * width;
        int64_t x = 0;
        for (; x + 8 <= width; x += 8) {
          uint64_t v;
          std::memcpy(&v, line + x, 8);
          const uint64_t byte = (v * 0x0102040810204080ULL) >> 56;
          const int64_t at = x + 1;
          const int shift = static_cast<int>(at & 63);
          out[at >> 6] |= byte << shift;
          if (shift > 56) out[(at >> 6) + 1] |= byte >> (64 - shift);
        }
        for (; x < width; ++x) out[(x + 1) >> 6] |= uint64_t{line[x]} << ((x + 1) & 63);
      }
  }

  // The bits at p - 1, p, p + 1 of `line` (p a padded position).
  static uint32_t three(const uint64_t* line, int64_t p) {
    const int64_t word = (p - 1) >> 6;
    const int shift = static_cast<int>((p - 1) & 63);
    uint64_t v = line[word] >> shift;
    if (shift > 61) v |= line[word + 1] << (64 - shift);
    return static_cast<uint32_t>(v & 7);
  }

  // The neighbourhood code (core/thinning3d.h) of position p of `line`.
  uint32_t code(const uint64_t* line, int64_t p) const {
    uint32_t code = 0;
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        code |= three(line + dz * plane + dy * words, p) << (9 * (dz + 1) + 3 * (dy + 1));
    return code & ~(uint32_t{1} << thinning3d::bit_of(0, 0, 0));
  }

  // The voxels of `line` whose neighbour in direction d (W, E, S, N, U, B:
  // y - 1, y + 1, x + 1, x - 1, z + 1, z - 1) is background, in word i.
  uint64_t border(const uint64_t* line, int64_t i, int d) const {
    uint64_t open;
    switch (d) {
      case 0: open = line[i - words]; break;
      case 1: open = line[i + words]; break;
      case 2: open = (line[i] >> 1) | (i + 1 < words ? line[i + 1] << 63 : 0); break;
      case 3: open = (line[i] << 1) | (i > 0 ? line[i - 1] >> 63 : 0); break;
      case 4: open = line[i + plane]; break;
      default: open = line[i - plane]; break;
    }
    return line[i] & ~open;
  }
};

struct Candidate {
  int64_t line, out;  // its row's first word in the bits, its index in the output slice
  int64_t p;          // its padded position in the row
  uint32_t code;      // its neighbourhood when listed
};

// Thins the slice in `s`, clearing the deleted voxels in `out` (a copy of it).
void thin_slice(BitSlice& s, bool* out, const int64_t* changes, std::vector<Candidate>& candidates) {
  const int directions = s.depth == 1 ? 4 : 6;
  int unchanged = 0;
  while (unchanged < directions) {
    unchanged = 0;
    for (int d = 0; d < directions; ++d) {
      candidates.clear();
      for (int64_t z = 1; z <= s.depth; ++z)
        for (int64_t y = 1; y <= s.height; ++y) {
          const uint64_t* line = s.row(z, y);
          if (std::all_of(line, line + s.words, [](uint64_t w) { return w == 0; })) continue;
          const int64_t first = ((z - 1) * s.height + (y - 1)) * s.width - 1;  // output index of p = 0
          for (int64_t i = 0; i < s.words; ++i)
            for (uint64_t border = s.border(line, i, d); border != 0; border &= border - 1) {
              const int64_t p = 64 * i + __builtin_ctzll(border);
              const uint32_t code = s.code(line, p);
              if (thinning3d::candidate(code, changes))
                candidates.push_back({line - s.bits.data(), first + p, p, code});
            }
        }
      bool changed = false;
      for (const Candidate& c : candidates) {
        uint64_t* line = s.bits.data() + c.line;
        const uint32_t code = s.code(line, c.p);
        if (code != c.code && !thinning3d::connected(code)) continue;
        line[c.p >> 6] &= ~(uint64_t{1} << (c.p & 63));
        out[c.out] = false;
        changed = true;
      }
      if (!changed) ++unchanged;
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
  const int64_t voxels = mask.size(2) * mask.size(3) * mask.size(4);
  const bool* source = m.data_ptr<bool>();
  bool* target = out.data_ptr<bool>();
  parallel_over(mask.size(0) * mask.size(1), voxels * 8, [&](int64_t begin, int64_t end) {
    BitSlice slice(m);
    std::vector<Candidate> candidates;
    for (int64_t i = begin; i < end; ++i) {
      slice.load(source + i * voxels);
      std::copy(source + i * voxels, source + (i + 1) * voxels, target + i * voxels);
      thin_slice(slice, target + i * voxels, euler_changes.data(), candidates);
    }
  });
  return out;
}

}  // namespace morphaug
