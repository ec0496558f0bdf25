// CUDA's execution model on the host, for the emulation build of csrc/cuda/
// (the test-only extension morphaug._C_emu): the .cu launchers compile
// unchanged as host C++ against this header (through cuda/runtime.cuh) and
// their ops register for the CPU key of the namespace morphaug_emu.
//
// What is modelled:
//   - a launch runs its grid block by block, the blocks in the order the
//     emulator is set to (forward, reverse or a seeded shuffle);
//   - the threads of a block are fibers on the calling thread: each runs
//     until it reaches a barrier (__syncthreads, a warp shuffle, ballot or
//     __syncwarp) or returns, in the set order, and the order is drawn again
//     after every barrier (so threads of a grid-stride loop, too, run in
//     every order);
//   - __syncthreads releases the block once every thread still running has
//     reached it (threads that returned count as arrived, as on sm_70+);
//     warp operations release their 32-lane group once every lane of the
//     mask has reached one; a lane of the mask that has returned, waits
//     elsewhere or does not exist is reported as an error, as is a
//     deadlock;
//   - __shared__ variables are per-kernel statics: blocks run one at a time,
//     so each block has them to itself;
//   - atomics are read-modify-writes; with the shuffled order each one may
//     also hand the thread back to the scheduler, so that other threads of
//     the block run between two atomics of one thread;
//   - launch configurations are checked against CUDA's limits (1 to 1024
//     threads a block, grid sizes 1 to 2^31 - 1 and 65535).
//
// What is not: plain loads and stores of different threads between two
// barriers never interleave (a thread's whole segment runs at once), memory
// is sequentially consistent (no caches, no reordering, no __threadfence
// needed), blocks never run concurrently, and nothing is timed. A kernel that
// is correct only under the weaker GPU memory model, or that relies on two
// blocks running at once (a grid-wide spin wait), cannot be shown wrong or
// right here.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#ifdef __CUDACC__
#error "cuda_emu.h is the host emulation of CUDA: include it from host C++ only"
#endif

struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int x = 1, unsigned int y = 1, unsigned int z = 1) : x(x), y(y), z(z) {}
};

struct EmulatedStream;
using cudaStream_t = EmulatedStream*;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __grid_constant__
#define __shared__ static

// The built-in variables of the running emulated thread.
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

namespace morphaug {
namespace emu {

// Runs `body` (the kernel with its arguments) for every thread of `grid`.
// `name` identifies the kernel in the launch counts. Throws c10::Error on a
// bad launch configuration or a warp / barrier error in the kernel.
void run_grid(const char* name, dim3 grid, dim3 block, void (*body)(void*), void* context);

// __syncthreads: waits for the block.
void block_barrier();

// A warp operation of the running thread with `mask`: stores `size` bytes
// (at most 8) of `value` as its lane's contribution, waits for the lanes of
// the mask and returns the 32 contributions of its warp (exited lanes: 0).
const uint64_t* warp_exchange(unsigned mask, const void* value, size_t size);

// The running thread's lane (0..31).
unsigned lane();

// Where an atomic may let other threads run first (shuffled order only).
void preemption_point();

template <typename T>
T shuffle(unsigned mask, T value, int source, int width) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "emulated shuffles move trivially copyable values of at most 8 bytes");
  const uint64_t* all = warp_exchange(mask, &value, sizeof(T));
  const int me = static_cast<int>(lane());
  const int base = me - me % width;
  if (source < 0 || source >= width) return value;  // out of the segment: the own value
  T result;
  std::memcpy(&result, &all[base + source], sizeof(T));
  return result;
}

template <typename T>
T atomic_update(T* address, T value, T (*update)(T, T)) {
  preemption_point();
  const T old = *address;
  *address = update(old, value);
  return old;
}

}  // namespace emu
}  // namespace morphaug

inline void __syncthreads() { morphaug::emu::block_barrier(); }

inline void __syncwarp(unsigned mask = 0xffffffffu) {
  const int nothing = 0;
  morphaug::emu::warp_exchange(mask, &nothing, sizeof nothing);
}

template <typename T>
T __shfl_sync(unsigned mask, T value, int source, int width = 32) {
  return morphaug::emu::shuffle(mask, value, source % width, width);
}

template <typename T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  const int within = static_cast<int>(morphaug::emu::lane()) % width;
  const int source = within - static_cast<int>(delta);
  return morphaug::emu::shuffle(mask, value, source < 0 ? within : source, width);
}

template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
  const int within = static_cast<int>(morphaug::emu::lane()) % width;
  const int source = within + static_cast<int>(delta);
  return morphaug::emu::shuffle(mask, value, source >= width ? within : source, width);
}

template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
  const int within = static_cast<int>(morphaug::emu::lane()) % width;
  return morphaug::emu::shuffle(mask, value, within ^ lane_mask, width);
}

// Bit intrinsics: leading zeros and the 1-based position of the lowest set bit (0 for none).
inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
inline int __ffs(unsigned x) { return __builtin_ffs(static_cast<int>(x)); }

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  const uint64_t vote = predicate != 0;
  const uint64_t* all = morphaug::emu::warp_exchange(mask, &vote, sizeof vote);
  unsigned ballot = 0;
  for (unsigned l = 0; l < 32; ++l) {
    if ((mask >> l & 1u) && all[l]) ballot |= 1u << l;
  }
  return ballot;
}

template <typename T>
T atomicAdd(T* address, T value) {
  return morphaug::emu::atomic_update<T>(address, value, [](T a, T b) { return static_cast<T>(a + b); });
}

template <typename T>
T atomicMin(T* address, T value) {
  return morphaug::emu::atomic_update<T>(address, value, [](T a, T b) { return b < a ? b : a; });
}

template <typename T>
T atomicMax(T* address, T value) {
  return morphaug::emu::atomic_update<T>(address, value, [](T a, T b) { return b > a ? b : a; });
}

template <typename T>
T atomicExch(T* address, T value) {
  return morphaug::emu::atomic_update<T>(address, value, [](T, T b) { return b; });
}

template <typename T>
T atomicOr(T* address, T value) {
  return morphaug::emu::atomic_update<T>(address, value, [](T a, T b) { return static_cast<T>(a | b); });
}

template <typename T>
T atomicCAS(T* address, T compare, T value) {
  morphaug::emu::preemption_point();
  const T old = *address;
  if (old == compare) *address = value;
  return old;
}

namespace morphaug {
namespace emu {

// "morphaug::{anonymous}::finish_kernel" from the __PRETTY_FUNCTION__ of
// kernel_name<finish_kernel<...>>: the kernel's unqualified name.
const char* intern_kernel_name(const char* source, const char* pretty_function);

template <auto Kernel>
const char* kernel_name(const char* source) {
  static const char* name = intern_kernel_name(source, __PRETTY_FUNCTION__);
  return name;
}

}  // namespace emu
}  // namespace morphaug
