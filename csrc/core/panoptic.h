// The counts of panoptic quality (monai.metrics.compute_panoptic_quality)
// for match_iou_threshold >= 0.5, shared by the CPU and CUDA launchers.
//
// An instance is a nonzero id of a (b, c) slice. From 0.5 up a matched pair
// (IoU above the threshold) overlaps more than half of each of its two
// instances, so each instance matches at most one other and no assignment is
// needed: the counts are the area of every instance, the intersection of
// every overlapping pair, and the pairs whose IoU exceeds the threshold. The
// launchers keep the ids in hash tables of 64-bit keys (the ids' bits, 0 the
// empty slot: the background is never a key) probed linearly from
// panoptic_home, and key a pair by its two instances' indices (pair_key:
// their slots on CUDA, their numbers on the CPU).
#pragma once

#include <cstdint>

#include "common.h"

namespace morphaug {

// A voxel's id as a key: its bits, sign-extended (0 for the background).
template <typename T>
MORPHAUG_HD uint64_t instance_key(T id) {
  return static_cast<uint64_t>(static_cast<int64_t>(id));
}

// Where probing for `key` starts in a table of `capacity` slots: the key's
// bits mixed (SplitMix64's finaliser), their high half scaled to the table
// (no division).
MORPHAUG_HD uint32_t panoptic_home(uint64_t key, uint32_t capacity) {
  key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ull;
  key = (key ^ (key >> 27)) * 0x94d049bb133111ebull;
  key ^= key >> 31;
  return static_cast<uint32_t>(((key >> 32) * capacity) >> 32);
}

// The key (nonzero) of the pair of instances of indices `pred` and `ref`.
MORPHAUG_HD uint64_t pair_key(uint32_t pred, uint32_t ref) {
  return (static_cast<uint64_t>(pred) + 1) << 32 | (static_cast<uint64_t>(ref) + 1);
}

MORPHAUG_HD uint32_t pair_pred(uint64_t key) { return static_cast<uint32_t>(key >> 32) - 1; }
MORPHAUG_HD uint32_t pair_ref(uint64_t key) { return static_cast<uint32_t>(key) - 1; }

// Whether a pair of `inter` common voxels between instances of `pred_area`
// and `ref_area` voxels matches, and (*iou) its IoU, as MONAI computes them:
// int64 counts divided in float32 (torch's true division of integer
// tensors), compared with the threshold rounded to float32 (torch's
// comparison of a float32 tensor with a Python float).
MORPHAUG_HD bool panoptic_match(int64_t inter, int64_t pred_area, int64_t ref_area, float threshold, float* iou) {
  *iou = static_cast<float>(inter) / static_cast<float>(pred_area + ref_area - inter);
  return *iou > threshold;
}

// A matched IoU in units of 2**-24: above the threshold, so in (0.5, 1],
// where every float32 is a multiple of 2**-24, so the units are exact
// integers and their int64 sum is the exact sum of the IoUs in any order.
MORPHAUG_HD int64_t iou_units(float iou) { return static_cast<int64_t>(iou * 16777216.0f); }

// The float32 sum of the matched IoUs of `units` (exact in double below 2**53).
MORPHAUG_HD float iou_sum(int64_t units) { return static_cast<float>(static_cast<double>(units) / 16777216.0); }

}  // namespace morphaug
