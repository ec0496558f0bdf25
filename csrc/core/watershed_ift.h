// SciPy's watershed_ift (NI_WatershedIFT, scipy/ndimage/src/ni_measure.c) on one
// slice, step for step, shared by the CPU launcher (a slice per task) and the
// CUDA one (a thread per slice). The queue order decides SciPy's ties, so the
// flood is sequential within a slice: one doubly linked list per cost level,
// object markers and their floods pushed at the front, background ones at the
// back, neighbours taken by flat offsets that wrap from the end of a row to the
// start of the next, and a node alone in its list left behind as that list's
// head when it moves to a cheaper one (it is popped again, done, later).
#pragma once

#include "common.h"

namespace morphaug {

// The most neighbour offsets: a (3,) * S structure of up to four axes.
constexpr int kWatershedMaxOffsets = 80;

// The flat offsets of the structure's neighbours in C order (its centre left out), by value.
struct WatershedOffsets {
  int count;
  int32_t step[kWatershedMaxOffsets];
};

// A slice's scratch: per voxel its cost (a done voxel holds ~cost, negative) and its list
// links (-1: none); per cost level the first and last voxel of its list, for every level
// the slice's input dtype has.
struct WatershedScratch {
  int32_t* cost;
  int32_t* next;
  int32_t* prev;
  int32_t* first;
  int32_t* last;
};

// Links voxel p into level `level`'s list: at the back for a background label, else at the front.
template <typename L>
MORPHAUG_HD void watershed_push(const WatershedScratch& s, int32_t p, int32_t level, L label) {
  if (label < 0) {
    s.prev[p] = s.last[level];
    s.next[p] = -1;
    if (s.last[level] >= 0) s.next[s.last[level]] = p;
    s.last[level] = p;
    if (s.first[level] < 0) s.first[level] = p;
  } else {
    s.next[p] = s.first[level];
    s.prev[p] = -1;
    if (s.first[level] >= 0) s.prev[s.first[level]] = p;
    s.first[level] = p;
    if (s.last[level] < 0) s.last[level] = p;
  }
}

// The flood of one slice of `size` voxels: `image` its values, `markers` read as C int (objects
// > 0, background < 0), `labels` the result (initially those ints as its dtype).
template <typename V, typename M, typename L>
MORPHAUG_HD void watershed_ift_slice(const V* image, const M* markers, L* labels, int32_t size,
                                     const WatershedOffsets& offsets, const WatershedScratch& s) {
  int32_t top = 0;
  for (int32_t i = 0; i < size; ++i) top = image[i] > top ? image[i] : top;
  for (int32_t level = 0; level <= top; ++level) s.first[level] = s.last[level] = -1;
  for (int32_t i = 0; i < size; ++i) {
    labels[i] = static_cast<L>(static_cast<int32_t>(markers[i]));
    s.next[i] = s.prev[i] = -1;
    s.cost[i] = top + 1;  // more than any path costs
  }
  for (int32_t i = 0; i < size; ++i) {
    const int32_t seed = static_cast<int32_t>(markers[i]);
    if (seed == 0) continue;
    s.cost[i] = 0;
    if (s.first[0] < 0) {
      s.first[0] = s.last[0] = i;
    } else {
      watershed_push(s, i, 0, seed);
    }
  }
  const uint32_t bound = static_cast<uint32_t>(size);
  for (int32_t level = 0; level <= top; ++level) {
    while (s.first[level] >= 0) {
      const int32_t v = s.first[level];
      s.first[level] = s.next[v];
      if (s.first[level] >= 0) s.prev[s.first[level]] = -1;
      s.next[v] = s.prev[v] = -1;
      const int32_t v_cost = s.cost[v] < 0 ? ~s.cost[v] : s.cost[v];  // a stale head is done already
      s.cost[v] = ~v_cost;
      const int32_t v_value = image[v];
      for (int e = 0; e < offsets.count; ++e) {
        // outside the slice, in either direction, is beyond `bound` as unsigned
        const uint32_t q = static_cast<uint32_t>(v) + static_cast<uint32_t>(offsets.step[e]);
        if (q >= bound) continue;
        const int32_t p = static_cast<int32_t>(q);
        const int32_t old = s.cost[p];
        if (old < 0) continue;  // done
        const int32_t difference = static_cast<int32_t>(image[p]) - v_value;
        const int32_t weight = difference < 0 ? -difference : difference;
        const int32_t cost = v_cost > weight ? v_cost : weight;
        if (cost >= old) continue;
        s.cost[p] = cost;
        const L label = labels[p] = labels[v];
        if (s.next[p] >= 0 || s.prev[p] >= 0) {  // unlinked from its list (alone there, it stays head)
          const int32_t before = s.prev[p], after = s.next[p];
          if (s.first[old] == p) s.first[old] = after;
          if (s.last[old] == p) s.last[old] = before;
          if (before >= 0) s.next[before] = after;
          if (after >= 0) s.prev[after] = before;
        }
        watershed_push(s, p, cost, label);
      }
    }
  }
}

}  // namespace morphaug
