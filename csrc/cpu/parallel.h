#pragma once
// How the CPU launchers split their work over torch's threads.
//
// A task gets at least kTaskWork voxel-operations (about a quarter to one
// millisecond). Below that a parallel region costs more than it saves, and on
// a core shared with other processes (DataLoader workers, other jobs, a
// notebook beside a training run) it waits for a thread that may not run for
// a whole time slice: a 64^3 volume then took 20 ms instead of 0.5 ms. Work
// smaller than one task runs on the calling thread.

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

namespace morphaug {

constexpr int64_t kTaskWork = int64_t{1} << 18;

// Items per task, for items of `item_work` voxel-operations each.
inline int64_t grain_for(int64_t item_work) {
  return std::max<int64_t>(1, kTaskWork / std::max<int64_t>(1, item_work));
}

// body(begin, end) over [0, count), items of `item_work` voxel-operations each.
template <typename Body>
void parallel_over(int64_t count, int64_t item_work, const Body& body) {
  at::parallel_for(0, count, grain_for(item_work), body);
}

}  // namespace morphaug
