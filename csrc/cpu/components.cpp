// CPU launchers of morphaug::label_sizes, morphaug::filter_components and
// morphaug::pick_component, the component tables, filters and draws of the transforms.
#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>
#include <ATen/Dispatch.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "../components_setup.h"
#include "../core/components.h"
#include "launchers.h"
#include "clones.h"
#include "label_scan.h"
#include "parallel.h"

namespace morphaug {
namespace {

// Labels come in runs along the raster order (a component's row segments, the
// background between them): both count and mark a run at a time.

// The end of the run of equal labels that starts at i, in labels[0, n).
template <typename T>
MORPHAUG_CLONE_INLINE inline int64_t run_end(const T* labels, int64_t i, int64_t n) {
  const T value = labels[i];
  int64_t j = i + 1;
  constexpr int64_t kBlock = 16;  // compared at once
  for (; j + kBlock <= n; j += kBlock) {
    bool same = true;
    for (int64_t t = 0; t < kBlock; ++t) same &= labels[j + t] == value;
    if (!same) break;
  }
  while (j < n && labels[j] == value) ++j;
  return j;
}

// Adds the voxels of each value of labels[0, n) to sizes[value]; returns where
// the first value outside [0, width) lies (not counted, nor what follows), or n.
template <typename T>
MORPHAUG_CPU_CLONES int64_t count_runs(const T* labels, int64_t n, int64_t width, int64_t* sizes) {
  for (int64_t i = 0; i < n;) {
    const int64_t j = run_end(labels, i, n);
    const T value = labels[i];
    if (value < 0 || value >= width) return i;
    sizes[value] += j - i;
    i = j;
  }
  return n;
}

// Whether each label 1 .. count of a slice goes: fewer than min_size voxels,
// or (keep >= 1) not among the keep largest, the higher label first on ties.
void removed_labels(const std::vector<int64_t>& sizes, int64_t keep, int64_t min_size,
                    std::vector<char>& removed) {
  const int64_t count = static_cast<int64_t>(sizes.size()) - 1;
  removed.assign(count + 1, 0);
  for (int64_t l = 1; l <= count; ++l) removed[l] = sizes[l] < min_size;
  if (keep < 1 || count <= keep) return;
  std::vector<int32_t> order(count);
  for (int64_t l = 0; l < count; ++l) order[l] = static_cast<int32_t>(l + 1);
  std::nth_element(order.begin(), order.begin() + (keep - 1), order.end(), [&](int32_t a, int32_t b) {
    return sizes[a] != sizes[b] ? sizes[a] > sizes[b] : a > b;
  });
  for (auto it = order.begin() + keep; it != order.end(); ++it) removed[*it] = 1;
}

}  // namespace

at::Tensor label_sizes_cpu(const at::Tensor& labels, int64_t width) {
  check_batched(labels, "label_sizes");
  TORCH_CHECK(labels.scalar_type() == at::kInt || labels.scalar_type() == at::kLong,
              "morphaug::label_sizes: expected int32 or int64 labels, got ", labels.scalar_type());
  TORCH_CHECK(width >= 1, "morphaug::label_sizes: width must be >= 1, got ", width);
  const int64_t slices = labels.size(0) * labels.size(1);
  at::Tensor sizes = at::zeros({labels.size(0), labels.size(1), width}, labels.options().dtype(at::kLong));
  if (labels.numel() == 0) return sizes;
  const int64_t numel = labels.numel() / slices;
  const at::Tensor l = labels.contiguous();
  // chunks of a slice, each with a table of its own: enough for the threads when slices are few
  const int64_t threads = at::get_num_threads();
  const int64_t wanted = std::max<int64_t>(1, std::min((threads + slices - 1) / slices, numel / kTaskWork));
  const int64_t length = (numel + wanted - 1) / wanted;
  const int64_t per_slice = (numel + length - 1) / length;
  int64_t* out = sizes.data_ptr<int64_t>();
  std::atomic<bool> outside{false};  // a value outside [0, width) was found
  std::atomic<int64_t> value{0};     // such a value
  auto count = [&](const auto* source, int64_t n, int64_t* table) {
    const int64_t stop = count_runs(source, n, width, table);
    if (stop < n) {
      value.store(static_cast<int64_t>(source[stop]));
      outside.store(true);
    }
  };
  AT_DISPATCH_INDEX_TYPES(l.scalar_type(), "label_sizes", [&] {
    const index_t* source = l.data_ptr<index_t>();
    if (per_slice == 1) {
      parallel_over(slices, numel, [&](int64_t begin, int64_t end) {
        for (int64_t s = begin; s < end; ++s) count(source + s * numel, numel, out + s * width);
      });
      return;
    }
    std::vector<int64_t> partial(slices * per_slice * width, 0);
    parallel_over(slices * per_slice, length, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t start = task % per_slice * length;
        count(source + task / per_slice * numel + start, std::min(length, numel - start),
              partial.data() + task * width);
      }
    });
    for (int64_t task = 0; task < slices * per_slice; ++task) {
      int64_t* row = out + task / per_slice * width;
      const int64_t* part = partial.data() + task * width;
      for (int64_t v = 0; v < width; ++v) row[v] += part[v];
    }
  });
  TORCH_CHECK(!outside.load(), "morphaug::label_sizes: label ", value.load(), " outside [0, ", width, ")");
  return sizes;
}

// filter_components: tasks are samples (a sample's channels mark one output slice).
at::Tensor filter_components_cpu(const at::Tensor& mask, at::IntArrayRef structure, int64_t keep,
                                 int64_t min_size) {
  FilterSetup f = filter_setup(mask, structure, keep, min_size);
  LabelSetup& s = f.labels;
  at::Tensor out = f.out;
  const int64_t samples = mask.size(0), channels = mask.size(1), numel = s.shape.numel;
  if (mask.numel() == 0) return out;
  TORCH_CHECK(joins_runs(s), "morphaug::filter_components: the structure must join neighbours along the last axis");
  const at::Tensor m = mask.contiguous();
  const bool* source = m.data_ptr<bool>();
  bool* result = out.data_ptr<bool>();
  const int64_t rows = numel / s.shape.size[s.shape.rank - 1];
  s.slices = 1;
  each_unit(s, samples, channels * numel * 4, [&](int64_t b, const Chunks& chunks) {
    std::vector<int64_t> sizes;
    std::vector<char> removed;
    bool* marked = result + b * numel;
    for (int64_t c = 0; c < channels; ++c) {
      label_slice_runs(s, chunks, source + (b * channels + c) * numel, [&](const auto& t, int64_t count) {
        sizes.assign(count + 1, 0);
        each_run(t, rows, [&](const Run<int32_t>& r, int32_t label, int64_t) { sizes[label] += r.end - r.start; });
        removed_labels(sizes, keep, min_size, removed);
        each_run(t, rows, [&](const Run<int32_t>& r, int32_t label, int64_t) {
          if (removed[label]) std::memset(marked + r.start, 1, r.end - r.start);
        });
      });
    }
  });
  return out;
}

// pick_component: a task per slice, each labelled by the run scan; the drawn label's runs marked.
at::Tensor pick_component_cpu(const at::Tensor& mask, at::IntArrayRef structure, const at::Tensor& draw,
                              int64_t max_size) {
  PickSetup p = pick_setup(mask, structure, draw, max_size);
  LabelSetup& s = p.labels;
  const int64_t numel = s.shape.numel, slices = s.slices;
  if (mask.numel() == 0) return p.out;
  TORCH_CHECK(joins_runs(s), "morphaug::pick_component: the structure must join neighbours along the last axis");
  const at::Tensor m = mask.contiguous();
  const bool* source = m.data_ptr<bool>();
  const float* draws = p.draw.data_ptr<float>();
  bool* result = p.out.data_ptr<bool>();
  const int64_t rows = numel / s.shape.size[s.shape.rank - 1];
  s.slices = 1;
  each_unit(s, slices, numel * 4, [&](int64_t slice, const Chunks& chunks) {
    if (!(draws[slice] >= 0.0f)) return;  // loses none: not labelled
    label_slice_runs(s, chunks, source + slice * numel, [&](const auto& t, int64_t count) {
      std::vector<int64_t> sizes(count + 1, 0);
      each_run(t, rows, [&](const Run<int32_t>& r, int32_t label, int64_t) { sizes[label] += r.end - r.start; });
      int64_t eligible = 0;
      for (int64_t l = 1; l <= count; ++l) eligible += sizes[l] < max_size;
      int64_t rank = drawn_rank(draws[slice], eligible), drawn = 0;
      for (int64_t l = 1; l <= count && drawn == 0; ++l) {
        if (sizes[l] < max_size && rank-- == 0) drawn = l;
      }
      if (drawn == 0) return;
      bool* marked = result + slice * numel;
      each_run(t, rows, [&](const Run<int32_t>& r, int32_t label, int64_t) {
        if (label == drawn) std::memset(marked + r.start, 1, r.end - r.start);
      });
    });
  });
  return p.out;
}

}  // namespace morphaug
