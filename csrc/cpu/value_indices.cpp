// CPU launcher of morphaug::value_indices (scipy.ndimage.value_indices of the
// whole (B, C, *spatial) array): a counting sort of the voxels by value, stable,
// so each value's voxels keep their C order.
//
// The flat voxels are cut into chunks: each chunk counts its values (a table
// of `span` int64 per chunk, the chunks in parallel), the counts are summed
// value by value, chunk by chunk, into each (value, chunk)'s first slot, and
// each chunk then writes the coordinates of its voxels there, walking them in
// C order with the coordinates carried from voxel to voxel (no division).
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "../launch.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr int64_t kMinChunk = int64_t{1} << 15;  // voxels

// Chunks of the n voxels: about 4 per thread, at least kMinChunk voxels each,
// their count tables (span int64 each) at most about 8 bytes per voxel.
int64_t chunk_count(int64_t n, int64_t span) {
  const int64_t by_work = std::max<int64_t>(1, std::min<int64_t>(4 * at::get_num_threads(), n / kMinChunk));
  const int64_t by_memory = std::max<int64_t>(1, (n + (int64_t{1} << 20)) / span);
  return std::min(by_work, by_memory);
}

// counts[j]: the voxels of value lowest + j (0 for `ignore`); returns the
// coordinates (rank, total) of the others, grouped by value, each group in C order.
template <typename T>
at::Tensor group(const T* v, int64_t n, at::IntArrayRef shape, int64_t lowest, int64_t span,
                 std::optional<int64_t> ignore, int64_t* counts) {
  const int64_t chunks = chunk_count(n, span), chunk = (n + chunks - 1) / chunks;
  const int64_t skipped = ignore.has_value() && *ignore >= lowest && *ignore < lowest + span ? *ignore - lowest : -1;
  std::vector<int64_t> slots(static_cast<size_t>(chunks * span), 0);  // per chunk: counts, then first slots
  std::vector<char> outside(static_cast<size_t>(chunks), 0);
  parallel_over(chunks, chunk, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      int64_t* count = slots.data() + c * span;
      for (int64_t i = c * chunk, stop = std::min(n, (c + 1) * chunk); i < stop; ++i) {
        const int64_t j = static_cast<int64_t>(v[i]) - lowest;
        if (j < 0 || j >= span) {
          outside[c] = 1;
          break;
        }
        ++count[j];
      }
    }
  });
  TORCH_CHECK(std::find(outside.begin(), outside.end(), 1) == outside.end(),
              "morphaug::value_indices: a value lies outside lowest .. lowest + span - 1 (", lowest, " .. ",
              lowest + span - 1, ")");
  int64_t total = 0;
  for (int64_t j = 0; j < span; ++j) {
    if (j == skipped) continue;
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t here = slots[c * span + j];
      slots[c * span + j] = total;
      total += here;
      counts[j] += here;
    }
  }
  const int rank = static_cast<int>(shape.size());
  at::Tensor coords = at::empty({rank, total}, at::TensorOptions().dtype(at::kLong));
  int64_t* xyz = coords.data_ptr<int64_t>();
  parallel_over(chunks, chunk * rank, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> at(rank);
    for (int64_t c = begin; c < end; ++c) {
      int64_t* next = slots.data() + c * span;
      const int64_t first = c * chunk, stop = std::min(n, first + chunk);
      for (int64_t k = rank - 1, rest = first; k >= 0; --k) {
        at[k] = rest % shape[k];
        rest /= shape[k];
      }
      for (int64_t i = first; i < stop; ++i) {
        const int64_t j = static_cast<int64_t>(v[i]) - lowest;
        if (j != skipped) {
          const int64_t p = next[j]++;
          for (int k = 0; k < rank; ++k) xyz[k * total + p] = at[k];
        }
        for (int k = rank - 1; k >= 0 && ++at[k] == shape[k]; --k) at[k] = 0;
      }
    }
  });
  return coords;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> value_indices_cpu(const at::Tensor& values, int64_t lowest, int64_t span,
                                                     std::optional<int64_t> ignore) {
  check_batched(values, "value_indices");
  TORCH_CHECK(at::isIntegralType(values.scalar_type(), false) && values.scalar_type() != at::kUInt16 &&
                  values.scalar_type() != at::kUInt32 && values.scalar_type() != at::kUInt64,
              "morphaug::value_indices: expected int8, uint8, int16, int32 or int64 values, got ",
              values.scalar_type());
  TORCH_CHECK(span >= 1, "morphaug::value_indices: span must be >= 1, got ", span);
  const at::Tensor v = values.contiguous();
  at::Tensor counts = at::zeros({span}, values.options().dtype(at::kLong));
  at::Tensor coords;
  AT_DISPATCH_INTEGRAL_TYPES(v.scalar_type(), "value_indices", [&] {
    coords = group<scalar_t>(v.data_ptr<scalar_t>(), v.numel(), v.sizes(), lowest, span, ignore,
                             counts.data_ptr<int64_t>());
  });
  return {counts, coords};
}

}  // namespace morphaug
