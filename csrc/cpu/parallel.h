#pragma once
// How the CPU launchers split their work over threads.
//
// A task gets at least kTaskWork voxel-operations (about a quarter to one
// millisecond). Work smaller than one task runs on the calling thread: below
// that, handing work to another thread costs more than it saves.
//
// Larger work runs in chunks that the calling thread and morphaug's helper
// threads (parallel.cpp) claim one at a time, and the calling thread never
// waits for a helper that has not started: it takes every chunk left and
// waits only for the chunks a helper is running. A parallel region of torch's
// OpenMP pool waits for every thread of the team to arrive. On a core shared
// with other processes (DataLoader workers, other jobs, a notebook beside a
// training run) a thread may not run for a whole time slice, many times
// the work of a small call.

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <functional>

namespace morphaug {

constexpr int64_t kTaskWork = int64_t{1} << 18;

// Items per task, for items of `item_work` voxel-operations each.
inline int64_t grain_for(int64_t item_work) {
  return std::max<int64_t>(1, kTaskWork / std::max<int64_t>(1, item_work));
}

// Whether the calling thread runs a chunk of run_chunks (whose own parallel
// loops then run on it alone).
bool in_chunk();

// body(begin, end) over [0, count) in chunks of `chunk` items, run by the
// calling thread and up to `helpers` helper threads (parallel.cpp).
void run_chunks(int64_t count, int64_t chunk, int helpers, const std::function<void(int64_t, int64_t)>& body);

// body(begin, end) over [0, count), items of `item_work` voxel-operations
// each: chunks of at least a task, about four per thread (so that a helper
// that starts late or is preempted leaves little for the others to wait on).
template <typename Body>
void parallel_over(int64_t count, int64_t item_work, const Body& body) {
  if (count <= 0) return;
  const int64_t grain = grain_for(item_work);
  const int64_t threads = at::get_num_threads();
  if (count <= grain || threads < 2 || at::in_parallel_region() || in_chunk()) {
    body(int64_t{0}, count);
    return;
  }
  const int64_t chunks = std::min((count + grain - 1) / grain, 4 * threads);
  run_chunks(count, (count + chunks - 1) / chunks, static_cast<int>(threads - 1), body);
}

// body(begin, end) over [0, count) independent problems that iterate with BLAS
// products (the OT loops): one share of whole problems per thread, and none
// below a task of work (items of `item_work` each). Every product runs
// single-threaded. A product that opened a parallel region of its own would
// wait for a thread at each of the thousands of products of a loop, and on
// a shared core each such wait can last a time slice. So these loops run in
// torch's OpenMP pool, where MKL and OpenBLAS run single-threaded, and when
// the calling thread takes every problem, it runs them inside a parallel
// region whose other threads have nothing to do.
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
