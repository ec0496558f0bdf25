// What the CUDA launchers need from the CUDA runtime and c10, in one place:
// the device guard, the current stream, kernel launches and the library the
// kernels register in. Under nvcc these are CUDA's own; in the emulation
// build (MORPHAUG_CUDA_EMULATION, the .cu files compiled as host C++ into the
// test-only extension morphaug._C_emu) they come from emu/cuda_emu.h, and the
// ops register for the CPU key of the namespace morphaug_emu.
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>

#include <utility>

#ifdef MORPHAUG_CUDA_EMULATION
#include "../emu/cuda_emu.h"
#ifndef MORPHAUG_EMU_SOURCE
#error "the emulation build names each .cu file in MORPHAUG_EMU_SOURCE (setup.py)"
#endif
#else
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace morphaug {
namespace cuda {

#ifdef MORPHAUG_CUDA_EMULATION

// Emulated tensors live on the CPU.
struct DeviceGuard {
  explicit DeviceGuard(const at::Device& device) {
    TORCH_CHECK(device.is_cpu(), "morphaug_emu: the emulated CUDA kernels take CPU tensors, got ",
                device);
  }
};

inline cudaStream_t current_stream() { return nullptr; }

// Kernel<<<grid, block, 0, stream>>>(args...), run by the emulator.
template <auto Kernel, typename... Args>
void launch(dim3 grid, dim3 block, cudaStream_t, Args&&... args) {
  auto call = [&] { Kernel(args...); };
  using Call = decltype(call);
  emu::run_grid(emu::kernel_name<Kernel>(MORPHAUG_EMU_SOURCE), grid, block,
                [](void* context) { (*static_cast<Call*>(context))(); }, &call);
}

#else

using DeviceGuard = c10::cuda::CUDAGuard;

inline cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream(); }

// Kernel<<<grid, block, 0, stream>>>(args...), with torch's launch check.
template <auto Kernel, typename... Args>
void launch(dim3 grid, dim3 block, cudaStream_t stream, Args&&... args) {
  Kernel<<<grid, block, 0, stream>>>(std::forward<Args>(args)...);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

#endif

}  // namespace cuda
}  // namespace morphaug

// TORCH_LIBRARY_IMPL block of a CUDA launcher file: the CUDA key of
// morphaug, or in the emulation build the CPU key of morphaug_emu.
#ifdef MORPHAUG_CUDA_EMULATION
#define MORPHAUG_CUDA_KERNELS(m) TORCH_LIBRARY_IMPL(morphaug_emu, CPU, m)
#else
#define MORPHAUG_CUDA_KERNELS(m) TORCH_LIBRARY_IMPL(morphaug, CUDA, m)
#endif
