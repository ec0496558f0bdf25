// CPU launcher of morphaug::label: a union-find raster scan (core/label.h)
// per chunk of a slice, chunks and slices in parallel.
//
// Each slice is cut into chunks of whole rows (of voxels, for one spatial
// axis), as many as the threads need (one per slice when there are slices
// enough). Phases, each a parallel loop over chunks or slices:
//   1. scan: each chunk joins each voxel to its neighbours before it inside
//      the chunk, with path compression (a chunk's parents stay in it),
//      skipping a neighbour once one next to it has been joined;
//   2. merge (per slice, several chunks): the edges into earlier chunks, then
//      each root that got linked points at its final root (so pointers leave
//      a chunk only from such roots, straight to a final root);
//   3. number, in raster order (a voxel's parent comes first): the k-th root
//      of a chunk k, every other voxel its parent's number, or -1 - g when
//      its final root g lies in an earlier chunk; then the roots before each
//      chunk of a slice. With one chunk per slice, the labels are done;
//   4. (several chunks) those voxels take minus their root's number in the
//      slice, the roots before its chunk plus k (positive values are only read);
//   5. (several chunks) every chunk's numbers become the slice's.
// Roots keep the minimum raster index of their component, so numbering them
// in raster order is SciPy's numbering.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "../core/label.h"
#include "../launch.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr int64_t kMinChunk = int64_t{1} << 15;  // voxels: smaller chunks are not worth a merge

// Chunks of whole rows (for one spatial axis: of voxels) cutting each slice.
struct Chunks {
  int64_t per_slice, length;  // chunks in a slice, voxels in each (the last may be shorter)

  Chunks(const LabelShape& shape, int64_t slices) {
    const int64_t row = shape.rank == 1 ? 1 : shape.size[shape.rank - 1];
    const int64_t rows = shape.numel / row;
    const int64_t threads = at::get_num_threads();
    const int64_t wanted = std::max<int64_t>(
        1, std::min((threads + slices - 1) / slices, shape.numel / kMinChunk));
    length = (rows + wanted - 1) / wanted * row;
    per_slice = (shape.numel + length - 1) / length;
  }
};

// The backward offsets that stay inside the slice from one row (on every axis
// but the last): their linear offsets, steps along the row and places in the
// setup's list.
struct RowNeighbours {
  std::vector<int64_t> linear;
  std::vector<int8_t> step;
  std::vector<int64_t> index;
  int64_t n;  // the row's length

  // Whether neighbour e of the voxel at i in the row stays on the row.
  bool on_row(size_t e, int64_t i) const { return step[e] < 0 ? i > 0 : step[e] == 0 || i < n - 1; }
};

// Calls row(row_start, start, stop, neighbours) for the part [start, stop) of
// each row that meets [begin, end), a slice's voxels in raster order.
template <typename Row>
void each_row(const LabelSetup& s, int64_t begin, int64_t end, Row&& row) {
  const LabelShape& shape = s.shape;
  const int rank = shape.rank;
  RowNeighbours neighbours;
  neighbours.n = shape.size[rank - 1];
  int64_t coord[kMaxRank];
  for (int64_t start = begin; start < end;) {
    const int64_t row_start = start - start % neighbours.n;
    const int64_t stop = std::min(end, row_start + neighbours.n);
    shape.coordinates(row_start, coord);
    neighbours.linear.clear();
    neighbours.step.clear();
    neighbours.index.clear();
    for (int64_t e = 0; e < s.count(); ++e) {
      if (!shape.inside(coord, &s.delta[e * rank], rank - 1)) continue;
      neighbours.linear.push_back(s.linear[e]);
      neighbours.step.push_back(s.delta[e * rank + rank - 1]);
      neighbours.index.push_back(e);
    }
    row(row_start, start, stop, neighbours);
    start = stop;
  }
}

// For each of the first 64 backward offsets, a bit per earlier offset whose
// neighbour is also a neighbour of its own (their difference is a structure
// offset): once that one is joined, so is this one.
std::vector<uint64_t> adjacent_offsets(const LabelSetup& s) {
  const int rank = s.shape.rank;
  auto code = [&](const int8_t* a, const int8_t* b, int sign) {  // (a - b) * sign in base 3, or -1
    int64_t c = 0;
    for (int k = 0; k < rank; ++k) {
      const int d = sign * (a[k] - b[k]);
      if (d < -1 || d > 1) return int64_t{-1};
      c = 3 * c + d + 1;
    }
    return c;
  };
  int64_t codes = 1;
  for (int k = 0; k < rank; ++k) codes *= 3;
  std::vector<bool> backward(codes, false);
  const std::vector<int8_t> zero(rank, 0);
  for (int64_t e = 0; e < s.count(); ++e) backward[code(&s.delta[e * rank], zero.data(), 1)] = true;
  const int64_t limit = std::min<int64_t>(s.count(), 64);
  std::vector<uint64_t> adjacent(s.count(), 0);
  for (int64_t e = 0; e < limit; ++e) {
    for (int64_t f = 0; f < e; ++f) {
      const int8_t* a = &s.delta[e * rank];
      const int8_t* b = &s.delta[f * rank];
      const int64_t ahead = code(a, b, 1), behind = code(a, b, -1);
      if ((ahead >= 0 && backward[ahead]) || (behind >= 0 && backward[behind])) adjacent[e] |= uint64_t{1} << f;
    }
  }
  return adjacent;
}

template <typename T>
T lower_plain(T* address, T value) {
  const T old = *address;
  if (value < old) *address = value;
  return old;
}

template <typename T>
void run(const LabelSetup& s, const bool* mask, T* parent, int64_t* counts) {
  const int64_t numel = s.shape.numel;
  const Chunks chunks(s.shape, s.slices);
  const int64_t tasks = s.slices * chunks.per_slice;
  // body(task, begin, end, m, P) for every chunk [begin, end) of every slice, in parallel
  auto each_chunk = [&](auto&& body) {
    parallel_over(tasks, chunks.length, [&](int64_t first, int64_t stop) {
      for (int64_t task = first; task < stop; ++task) {
        const int64_t slice = task / chunks.per_slice;
        const int64_t begin = task % chunks.per_slice * chunks.length;
        body(task, begin, std::min(numel, begin + chunks.length), mask + slice * numel,
             parent + slice * numel);
      }
    });
  };
  auto each_slice = [&](auto&& body) {
    parallel_over(s.slices, numel, [&](int64_t first, int64_t stop) {
      for (int64_t slice = first; slice < stop; ++slice) body(slice, mask + slice * numel, parent + slice * numel);
    });
  };
  // 1. scan
  const std::vector<uint64_t> adjacent = adjacent_offsets(s);
  each_chunk([&](int64_t, int64_t begin, int64_t end, const bool* m, T* P) {
    each_row(s, begin, end, [&](int64_t row_start, int64_t start, int64_t stop, const RowNeighbours& near) {
      for (int64_t p = start; p < stop; ++p) {
        if (!m[p]) continue;
        P[p] = static_cast<T>(p);
        uint64_t joined = 0;  // bits of the neighbours in p's set by now (the first 64)
        for (size_t e = 0; e < near.linear.size(); ++e) {
          const int64_t q = p + near.linear[e];
          if (!near.on_row(e, p - row_start) || q < begin || !m[q]) continue;
          const int64_t k = near.index[e];
          const bool already = (joined & adjacent[k]) != 0;
          if (k < 64) joined |= uint64_t{1} << k;
          if (!already) label_union<true>(P, static_cast<T>(p), static_cast<T>(q), lower_plain<T>);
        }
      }
    });
  });

  // 2. merge
  if (chunks.per_slice > 1) {
    int64_t reach = 0;  // the longest backward step
    for (const int64_t l : s.linear) reach = std::max(reach, -l);
    each_slice([&](int64_t, const bool* m, T* P) {
      std::vector<int64_t> linked;
      auto lower = [&](T* address, T value) {  // sequential: it always links the root
        linked.push_back(address - P);
        return lower_plain(address, value);
      };
      for (int64_t begin = chunks.length; begin < numel; begin += chunks.length) {
        const int64_t end = std::min({numel, begin + chunks.length, begin + reach});
        each_row(s, begin, end, [&](int64_t row_start, int64_t start, int64_t stop, const RowNeighbours& near) {
          for (int64_t p = start; p < stop; ++p) {
            for (size_t e = 0; m[p] && e < near.linear.size(); ++e) {
              const int64_t q = p + near.linear[e];
              if (near.on_row(e, p - row_start) && q < begin && m[q]) {
                label_union<false>(P, static_cast<T>(p), static_cast<T>(q), lower);
              }
            }
          }
        });
      }
      // a linked root's parents lead to its final root; in increasing order,
      // through smaller linked roots that already point at theirs
      std::sort(linked.begin(), linked.end());
      for (const int64_t r : linked) P[r] = label_find<false>(P, P[r]);
    });
  }

  // 3. number each chunk: its k-th root k, the voxels under it likewise, in
  // raster order (a voxel's parent comes before it); a voxel whose final root
  // g lies in an earlier chunk -1 - g; the background 0
  std::vector<int64_t> roots(tasks);  // per chunk: its roots, then those before it in the slice
  each_chunk([&](int64_t task, int64_t begin, int64_t end, const bool* m, T* P) {
    T k = 0;
    for (int64_t p = begin; p < end; ++p) {
      if (!m[p]) {
        P[p] = 0;
        continue;
      }
      const T up = P[p];
      P[p] = up == p ? ++k : (up >= begin ? P[up] : -1 - up);
    }
    roots[task] = k;
  });
  for (int64_t slice = 0; slice < s.slices; ++slice) {
    int64_t before = 0;
    for (int64_t c = slice * chunks.per_slice; c < (slice + 1) * chunks.per_slice; ++c) {
      const int64_t k = roots[c];
      roots[c] = before;
      before += k;
    }
    counts[slice] = before;
  }
  if (chunks.per_slice == 1) return;

  // 4. the voxels under a root in an earlier chunk: minus its number in the
  // slice (the roots' own numbers are only read, so far)
  each_chunk([&](int64_t task, int64_t begin, int64_t end, const bool*, T* P) {
    const int64_t* before = &roots[task - task % chunks.per_slice];
    for (int64_t p = begin; p < end; ++p) {
      if (P[p] < 0) {
        const int64_t root = -1 - P[p];
        P[p] = static_cast<T>(-(before[root / chunks.length] + P[root]));
      }
    }
  });

  // 5. the slice's numbers
  each_chunk([&](int64_t task, int64_t begin, int64_t end, const bool*, T* P) {
    const int64_t before = roots[task];
    for (int64_t p = begin; p < end; ++p) {
      if (P[p] < 0) {
        P[p] = -P[p];
      } else if (P[p] > 0) {
        P[p] = static_cast<T>(P[p] + before);
      }
    }
  });
}

std::tuple<at::Tensor, at::Tensor> label_cpu(const at::Tensor& mask, at::IntArrayRef structure,
                                             at::ScalarType dtype) {
  const LabelSetup s = label_setup(mask, structure, dtype);
  at::Tensor labels = at::empty(mask.sizes(), mask.options().dtype(dtype));
  at::Tensor counts = at::zeros({mask.size(0), mask.size(1)}, mask.options().dtype(at::kLong));
  if (mask.numel() == 0) return {labels, counts};
  const at::Tensor m = mask.contiguous();
  AT_DISPATCH_INDEX_TYPES(dtype, "label", [&] {
    run<index_t>(s, m.data_ptr<bool>(), labels.data_ptr<index_t>(), counts.data_ptr<int64_t>());
  });
  return {labels, counts};
}

}  // namespace

TORCH_LIBRARY_IMPL(morphaug, CPU, m) { m.impl("label", &label_cpu); }

}  // namespace morphaug
