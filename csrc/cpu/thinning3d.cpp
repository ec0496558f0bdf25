// CPU launcher of morphaug::skeletonize_parallel: the parallel method of
// morphaug.morphology.skeletonize (morphaug/morphology/_parallel.py), the
// same voxels as its torch code, every slice thinned in the kernel.
//
// Per border direction (W, E, S, N, U, B; U and B skipped for slices one
// plane deep) the surface voxels of that border that are simple and not end
// points are listed; then subfield by subfield (core/thinning3d.h: the
// parities of the padded coordinates) those still simple are deleted. Voxels
// of one subfield are never neighbours, so deleting them one by one deletes
// what deleting them at once would. Only the surface is visited
// (surface3d.h). Slices run in parallel.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "../core/thinning3d.h"
#include "../launch.h"
#include "../thinning3d_checks.h"
#include "launchers.h"
#include "fresh.h"
#include "parallel.h"
#include "surface3d.h"

namespace morphaug {
namespace {

// Rounds of the directions (at most `rounds`, none for rounds < 1) until one deletes nothing; whether the
// last one deleted something.
bool thin_slice(const PaddedSlice& s, uint8_t* image, const int64_t* changes, Surface& surface, int64_t rounds) {
  std::vector<int64_t> listed[8];
  bool changed = true;
  for (int64_t round = 0; changed && (rounds < 1 || round < rounds); ++round) {
    changed = false;
    for (int d = 0; d < s.directions; ++d) {
      for (auto& subfield : listed) subfield.clear();
      for (const int64_t at : surface.voxels) {
        if (image[at + s.faces[d]] != 0) continue;
        if (thinning3d::candidate(thinning3d::code_at(image, at, s.row, s.plane), changes)) {
          const int64_t z = at / s.plane, y = (at - z * s.plane) / s.row, x = at - z * s.plane - y * s.row;
          listed[thinning3d::subfield(z, y, x)].push_back(at);
        }
      }
      bool deleted = false;
      for (const auto& subfield : listed) {
        for (const int64_t at : subfield) {
          if (!thinning3d::simple(thinning3d::code_at(image, at, s.row, s.plane), changes)) continue;
          surface.remove(s, image, at);
          deleted = true;
        }
      }
      if (deleted) surface.update(image);
      changed |= deleted;
    }
  }
  return changed;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> skeletonize_parallel_cpu(const at::Tensor& mask, const at::Tensor& active,
                                                            at::IntArrayRef euler_changes, int64_t rounds) {
  check_skeletonize_parallel(mask, active, euler_changes);
  at::Tensor out = fresh_empty(mask.sizes(), mask.options());
  at::Tensor still = fresh_empty(active.sizes(), active.options());
  if (mask.numel() == 0) {
    still.fill_(false);
    return {out, still};
  }
  const at::Tensor m = mask.contiguous(), a = active.contiguous();
  const PaddedSlice shape(m);
  const bool* source = m.data_ptr<bool>();
  const bool* thinning = a.data_ptr<bool>();
  bool* target = out.data_ptr<bool>();
  bool* left = still.data_ptr<bool>();
  parallel_over(mask.size(0) * mask.size(1), shape.voxels * 8, [&](int64_t begin, int64_t end) {
    std::vector<uint8_t> image(shape.padded);
    Surface surface;
    for (int64_t slice = begin; slice < end; ++slice) {
      const bool* in = source + slice * shape.voxels;
      bool* result = target + slice * shape.voxels;
      if (!thinning[slice]) {
        std::copy(in, in + shape.voxels, result);
        left[slice] = false;
        continue;
      }
      shape.load(in, image.data());
      surface.build(shape, image.data());
      left[slice] = thin_slice(shape, image.data(), euler_changes.data(), surface, rounds);
      shape.store(image.data(), result);
    }
  });
  return {out, still};
}

}  // namespace morphaug
