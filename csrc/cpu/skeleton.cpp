// CPU launcher of morphaug::skeletonize_lee: scikit-image's 3-D skeletonize
// (Lee, Kashyap and Chu's thinning, method="lee") of every slice, bit for bit.
//
// The algorithm is sequential: per border direction (scikit-image's order W,
// E, S, N, U, B; U and B skipped for slices one plane deep), the foreground
// voxels of that border that are simple, Euler invariant and not end points
// are listed in raster order, then re-checked one by one (simple in the
// image as it is now) and deleted; this repeats until a whole round of
// directions deletes nothing. scikit-image scans every voxel for each
// direction; here only the surface is (surface3d.h), in the same raster
// order. The tests on one voxel are core/thinning3d.h's. Slices run in parallel.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "../core/thinning3d.h"
#include "../launch.h"
#include "launchers.h"
#include "fresh.h"
#include "parallel.h"
#include "surface3d.h"

namespace morphaug {
namespace {

void thin_slice(const PaddedSlice& s, uint8_t* image, const int64_t* changes, Surface& surface) {
  std::vector<int64_t> candidates;
  int unchanged = 0;
  while (unchanged < s.directions) {
    unchanged = 0;
    for (int d = 0; d < s.directions; ++d) {
      candidates.clear();
      for (const int64_t at : surface.voxels) {
        if (image[at + s.faces[d]] != 0) continue;
        if (thinning3d::candidate(thinning3d::code_at(image, at, s.row, s.plane), changes)) candidates.push_back(at);
      }
      bool changed = false;
      for (const int64_t at : candidates) {
        if (!thinning3d::connected(thinning3d::code_at(image, at, s.row, s.plane))) continue;
        surface.remove(s, image, at);
        changed = true;
      }
      if (changed) {
        surface.update(image);
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
  const PaddedSlice shape(m);
  const bool* source = m.data_ptr<bool>();
  bool* target = out.data_ptr<bool>();
  parallel_over(mask.size(0) * mask.size(1), shape.voxels * 8, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> image(shape.padded);
    Surface surface;
    for (int64_t slice = begin; slice < end; ++slice) {
      shape.load(source + slice * shape.voxels, image.data());
      surface.build(shape, image.data());
      thin_slice(shape, image.data(), euler_changes.data(), surface);
      shape.store(image.data(), target + slice * shape.voxels);
    }
  });
  return out;
}

}  // namespace morphaug
