// Probe kernels of the emulator (tests/test_cuda_emulation.py): written as
// CUDA is, to show that the emulated model holds (barriers, warp shuffles
// and ballots, atomics), that thread orders change what an order-dependent
// kernel computes, and that the errors a GPU would leave silent are caught.
// Built into morphaug._C_emu only, as ops morphaug_emu::probe_*.
#define MORPHAUG_EMU_SOURCE "probes.cpp"
#include "../cuda/runtime.cuh"

namespace morphaug {
namespace {

constexpr unsigned kAll = 0xffffffffu;

// An inclusive scan of each row of x, one block per row: a scan per warp by
// shuffles, the warp totals scanned by warp 0 through shared memory.
__global__ void block_scan_kernel(const int32_t* x, int32_t* out, int n) {
  __shared__ int32_t totals[32];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  int32_t v = x[blockIdx.x * n + t];
  for (int delta = 1; delta < 32; delta *= 2) {
    const int32_t earlier = __shfl_up_sync(kAll, v, delta);
    if (lane >= delta) v += earlier;
  }
  if (lane == 31) totals[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = n / 32;
    int32_t total = lane < warps ? totals[lane] : 0;
    for (int delta = 1; delta < 32; delta *= 2) {
      const int32_t earlier = __shfl_up_sync(kAll, total, delta);
      if (lane >= delta) total += earlier;
    }
    if (lane < warps) totals[lane] = total;
  }
  __syncthreads();
  out[blockIdx.x * n + t] = warp > 0 ? v + totals[warp - 1] : v;
}

__global__ void ballot_kernel(const bool* x, int64_t* out) {
  const unsigned bits = __ballot_sync(kAll, x[threadIdx.x]);
  if (threadIdx.x % 32 == 0) out[threadIdx.x / 32] = bits;
}

__global__ void last_writer_kernel(int32_t* out) {
  *out = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
}

// Reads the counter, then stores the read value plus one: a lost update
// whenever another thread runs between the two.
__global__ void atomic_race_kernel(int32_t* counter) {
  const int32_t seen = *counter;
  atomicExch(counter, seen + 1);
}

__global__ void atomic_sum_kernel(int32_t* counter) {
  atomicAdd(counter, static_cast<int32_t>(threadIdx.x));
}

__global__ void empty_kernel() {}

// Lane 0 returns; the others shuffle with a mask that names it.
__global__ void exited_lane_kernel(int32_t* out) {
  if (threadIdx.x == 0) return;
  out[threadIdx.x] = __shfl_sync(kAll, static_cast<int32_t>(threadIdx.x), 1);
}

// A full mask in a block of 48 threads: the second warp has 16 lanes.
__global__ void partial_warp_kernel(int32_t* out) {
  out[threadIdx.x] = __shfl_sync(kAll, static_cast<int32_t>(threadIdx.x), 0);
}

// Thread 0 waits at __syncthreads, the rest of its warp in a shuffle that needs it.
__global__ void divergent_barrier_kernel(int32_t* out) {
  if (threadIdx.x == 0) {
    __syncthreads();
  } else {
    out[threadIdx.x] = __shfl_sync(kAll, static_cast<int32_t>(threadIdx.x), 0);
  }
}

at::Tensor probe_block_scan(const at::Tensor& x) {
  const at::Tensor in = x.contiguous();
  at::Tensor out = at::empty_like(in);
  cuda::launch<block_scan_kernel>(in.size(0), in.size(1), nullptr, in.data_ptr<int32_t>(),
                                  out.data_ptr<int32_t>(), static_cast<int>(in.size(1)));
  return out;
}

at::Tensor probe_ballot(const at::Tensor& x) {
  const at::Tensor in = x.contiguous();
  at::Tensor out = at::zeros({in.numel() / 32}, in.options().dtype(at::kLong));
  cuda::launch<ballot_kernel>(1, in.numel(), nullptr, in.data_ptr<bool>(), out.data_ptr<int64_t>());
  return out;
}

at::Tensor probe_last_writer(int64_t blocks, int64_t threads) {
  at::Tensor out = at::full({}, -1, at::kInt);
  cuda::launch<last_writer_kernel>(blocks, threads, nullptr, out.data_ptr<int32_t>());
  return out;
}

at::Tensor probe_atomic_race(int64_t threads) {
  at::Tensor counter = at::zeros({}, at::kInt);
  cuda::launch<atomic_race_kernel>(1, threads, nullptr, counter.data_ptr<int32_t>());
  return counter;
}

at::Tensor probe_atomic_sum(int64_t threads) {
  at::Tensor counter = at::zeros({}, at::kInt);
  cuda::launch<atomic_sum_kernel>(1, threads, nullptr, counter.data_ptr<int32_t>());
  return counter;
}

void probe_launch(int64_t blocks, int64_t threads) {
  cuda::launch<empty_kernel>(blocks, threads, nullptr);
}

at::Tensor probe_exited_lane() {
  at::Tensor out = at::zeros({32}, at::kInt);
  cuda::launch<exited_lane_kernel>(1, 32, nullptr, out.data_ptr<int32_t>());
  return out;
}

at::Tensor probe_partial_warp() {
  at::Tensor out = at::zeros({48}, at::kInt);
  cuda::launch<partial_warp_kernel>(1, 48, nullptr, out.data_ptr<int32_t>());
  return out;
}

at::Tensor probe_divergent_barrier() {
  at::Tensor out = at::zeros({32}, at::kInt);
  cuda::launch<divergent_barrier_kernel>(1, 32, nullptr, out.data_ptr<int32_t>());
  return out;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(morphaug_emu, m) {
  m.def("probe_block_scan", &probe_block_scan);
  m.def("probe_ballot", &probe_ballot);
  m.def("probe_last_writer", &probe_last_writer);
  m.def("probe_atomic_race", &probe_atomic_race);
  m.def("probe_atomic_sum", &probe_atomic_sum);
  m.def("probe_launch", &probe_launch);
  m.def("probe_exited_lane", &probe_exited_lane);
  m.def("probe_partial_warp", &probe_partial_warp);
  m.def("probe_divergent_barrier", &probe_divergent_barrier);
}

}  // namespace morphaug
