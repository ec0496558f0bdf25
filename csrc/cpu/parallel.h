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

// body(begin, end) over [0, count) independent problems that iterate with BLAS
// products (the OT loops): one share of whole problems per thread, and none
// below a task of work (items of `item_work` each). Every product runs
// single-threaded. A product that opened a parallel region of its own would
// wait for a thread at each of the thousands of products of a loop. On a
// shared core, each such wait can last a time slice: a 128x128 barycenter
// took 1.7 s there instead of 0.17 s. So when the calling thread takes every
// problem, it runs them inside a parallel region whose other threads have
// nothing to do. MKL and OpenBLAS run single-threaded inside a parallel
// region.
template <typename Body>
void parallel_shares(int64_t count, int64_t item_work, const Body& body) {
  const int64_t threads = at::get_num_threads();
  const int64_t grain = std::max((count + threads - 1) / threads, grain_for(item_work));
  if (count <= grain && threads > 1 && !at::in_parallel_region()) {
    at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t) {
      if (begin == 0) body(int64_t{0}, count);
    });
  } else {
    at::parallel_for(0, count, grain, body);
  }
}

}  // namespace morphaug
