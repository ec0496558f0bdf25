// The zero-padded slices and the surface lists of the CPU parallel 3-D
// thinning (thinning3d.cpp; Lee's, skeleton.cpp, works on bit rows).
//
// Only the surface (the foreground voxels with a background face neighbour)
// can be border points, so the kernel visits it rather than the volume: a
// list in raster order, compacted as voxels go, with the voxels they uncover
// merged in; a round costs the surface, not the volume.
#pragma once

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace morphaug {

// A (D, H, W) slice padded by one zero voxel on every side.
struct PaddedSlice {
  int64_t depth, height, width, row, plane, padded, voxels;
  int64_t faces[6];  // the border directions' face neighbours, in scikit-image's order W, E, S, N, U, B
  int directions;    // 4 for a slice one plane deep (its in-plane borders), else 6

  explicit PaddedSlice(const at::Tensor& mask)
      : depth(mask.size(2)), height(mask.size(3)), width(mask.size(4)), row(width + 2),
        plane((height + 2) * row), padded((depth + 2) * plane), voxels(depth * height * width),
        faces{-row, row, 1, -1, plane, -plane}, directions(depth == 1 ? 4 : 6) {}

  void load(const bool* in, uint8_t* image) const {
    std::fill(image, image + padded, 0);
    for (int64_t z = 0; z < depth; ++z)
      for (int64_t y = 0; y < height; ++y)
        for (int64_t x = 0; x < width; ++x)
          image[(z + 1) * plane + (y + 1) * row + x + 1] = in[(z * height + y) * width + x];
  }

  void store(const uint8_t* image, bool* out) const {
    for (int64_t z = 0; z < depth; ++z)
      for (int64_t y = 0; y < height; ++y)
        for (int64_t x = 0; x < width; ++x)
          out[(z * height + y) * width + x] = image[(z + 1) * plane + (y + 1) * row + x + 1] != 0;
  }
};

// The surface of a padded slice, in raster order; `listed` marks it.
struct Surface {
  std::vector<int64_t> voxels, fresh;
  std::vector<uint8_t> listed;

  void build(const PaddedSlice& s, const uint8_t* image) {
    listed.assign(s.padded, 0);
    voxels.clear();
    fresh.clear();
    for (int64_t at = 0; at < s.padded; ++at) {
      if (!image[at]) continue;
      for (const int64_t face : s.faces) {
        if (!image[at + face]) {
          listed[at] = 1;
          voxels.push_back(at);
          break;
        }
      }
    }
  }

  // Deletes the voxel at `at` of `image` and lists its foreground face neighbours.
  void remove(const PaddedSlice& s, uint8_t* image, int64_t at) {
    image[at] = 0;
    listed[at] = 0;
    for (const int64_t face : s.faces) {
      const int64_t next = at + face;
      if (image[next] && !listed[next]) {
        listed[next] = 1;
        fresh.push_back(next);
      }
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

}  // namespace morphaug
