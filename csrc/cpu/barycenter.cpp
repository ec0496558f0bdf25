// CPU launcher of morphaug::grid_barycenter: the convolutional barycenter
// iterations (core/barycenter.h) with the grid kernels applied one axis at a
// time by single-threaded GEMMs, each thread iterating its own share of the
// problems (parallel.h), so that no iteration pays Python's per-op overhead
// or waits for another thread.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/zeros.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "../core/barycenter.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {
namespace {

// x <- x K_d along every axis d of a grid `shape` (x and scratch: numel values).
void apply_kernels(at::Tensor& x, at::Tensor& scratch, at::IntArrayRef shape, at::TensorList kernels) {
  const int64_t numel = x.numel();
  for (size_t d = 0; d < kernels.size(); ++d) {
    const int64_t n = shape[d];
    int64_t inner = 1;
    for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
    const int64_t outer = numel / (n * inner);
    if (inner == 1) {
      at::Tensor rows = scratch.view({outer, n});
      at::mm_out(rows, x.view({outer, n}), kernels[d]);
    } else {
      const at::Tensor kt = kernels[d].t();
      for (int64_t o = 0; o < outer; ++o) {
        at::Tensor block = scratch.narrow(0, o * n * inner, n * inner).view({n, inner});
        at::mm_out(block, kt, x.narrow(0, o * n * inner, n * inner).view({n, inner}));
      }
    }
    std::swap(x, scratch);
  }
}

// out = offset - softmin(l), or softmin(l) where offset is undefined, on one grid,
// softmin(l) = log(K exp(l - s)) + s with s = max(l) (0 when every l is
// -inf); ATen's vectorised exp and log.
void soft_min(const at::Tensor& l, const at::Tensor& offset, at::Tensor& out,
              at::Tensor& x, at::Tensor& scratch, at::IntArrayRef shape, at::TensorList kernels) {
  double shift = l.max().item<double>();
  if (shift == -INFINITY) shift = 0.0;
  at::sub_out(x, l, shift).exp_();
  apply_kernels(x, scratch, shape, kernels);
  x.log_().add_(shift);
  if (offset.defined()) {
    at::sub_out(out, offset, x);
  } else {
    out.copy_(x);
  }
}

// The whole loop for the problems [begin, end), one grid after another on
// the calling thread (single-threaded GEMMs, no synchronisation per iteration).
template <typename T>
void iterate(int64_t begin, int64_t end, const at::Tensor& log_hists, const at::Tensor& weights,
             at::TensorList kernels, int64_t max_iter, double tol, int64_t check_every, at::Tensor& log_bar) {
  const int64_t n_hists = log_hists.size(1);
  const at::IntArrayRef shape = log_hists.sizes().slice(2);
  const int64_t numel = log_bar.numel() / log_bar.size(0);
  const auto options = log_hists.options();
  const at::Tensor hists = log_hists.narrow(0, begin, end - begin).view({-1, numel});
  at::Tensor bar = log_bar.narrow(0, begin, end - begin).view({-1, numel});
  at::Tensor log_ku = at::empty_like(hists), log_v = at::empty_like(hists);
  at::Tensor x = at::empty({numel}, options), scratch = at::empty({numel}, options);
  const T* pw = weights.data_ptr<T>() + begin * n_hists;
  T *pku = log_ku.data_ptr<T>(), *pv = log_v.data_ptr<T>(), *pbar = bar.data_ptr<T>();
  const int64_t problems = end - begin;
  std::vector<uint8_t> active(problems, 1);
  const at::Tensor zeros = at::zeros({numel}, options), none;
  for (int64_t g = 0; g < problems * n_hists; ++g) {  // POT starts from U = 1
    at::Tensor ku = log_ku.select(0, g);
    soft_min(zeros, none, ku, x, scratch, shape, kernels);
  }
  for (int64_t it = 0; it < max_iter; ++it) {
    bool any = false;
    const bool check = it % check_every == check_every - 1;
    for (int64_t b = 0; b < problems; ++b) {
      if (!active[b]) continue;
      for (int64_t g = b * n_hists; g < (b + 1) * n_hists; ++g) {
        at::Tensor v = log_v.select(0, g), ku = log_ku.select(0, g);
        at::sub_out(v, bar.select(0, b), ku);
        // log_u = log_hists - softmin(log_v), in the storage of ku; then ku = softmin(log_u)
        soft_min(v, hists.select(0, g), ku, x, scratch, shape, kernels);
        soft_min(ku, none, ku, x, scratch, shape, kernels);
      }
      const T* ku_b = pku + b * n_hists * numel;
      for (int64_t p = 0; p < numel; ++p) {
        T sum = 0;
        for (int64_t i = 0; i < n_hists; ++i) sum += pw[b * n_hists + i] * ku_b[i * numel + p];
        pbar[b * numel + p] = sum;
      }
      if (check) {
        T spread = 0;
        for (int64_t p = 0; p < numel; ++p) {
          spread += barycenter_spread<T>(pv + b * n_hists * numel + p, ku_b + p, n_hists, numel);
        }
        active[b] = !(spread < tol);
      }
      any = any || active[b];
    }
    if (!any) break;
  }
}

}  // namespace

at::Tensor grid_barycenter_cpu(const at::Tensor& log_hists, const at::Tensor& weights,
                               at::TensorList kernels, int64_t max_iter, double tol,
                               int64_t check_every) {
  TORCH_CHECK(log_hists.dim() >= 3 && log_hists.size(0) > 0 && log_hists.size(1) > 0 &&
                  log_hists.numel() > 0,
              "morphaug::grid_barycenter: expected non-empty log_hists (B, N, *spatial), got ",
              log_hists.sizes());
  TORCH_CHECK(log_hists.scalar_type() == at::kFloat || log_hists.scalar_type() == at::kDouble,
              "morphaug::grid_barycenter: log_hists must be float32 or float64, got ",
              log_hists.scalar_type());
  TORCH_CHECK(weights.sizes() == log_hists.sizes().slice(0, 2) &&
                  weights.scalar_type() == log_hists.scalar_type(),
              "morphaug::grid_barycenter: weights must be (B, N) of the dtype of log_hists, got ",
              weights.scalar_type(), " ", weights.sizes());
  TORCH_CHECK(static_cast<int64_t>(kernels.size()) == log_hists.dim() - 2,
              "morphaug::grid_barycenter: one kernel per spatial axis, got ", kernels.size());
  for (size_t d = 0; d < kernels.size(); ++d) {
    const int64_t n = log_hists.size(d + 2);
    TORCH_CHECK(kernels[d].dim() == 2 && kernels[d].size(0) == n && kernels[d].size(1) == n &&
                    kernels[d].scalar_type() == log_hists.scalar_type() && kernels[d].is_cpu(),
                "morphaug::grid_barycenter: kernel ", d, " must be (", n, ", ", n, ") of the dtype "
                "of log_hists, got ", kernels[d].scalar_type(), " ", kernels[d].sizes());
  }
  TORCH_CHECK(max_iter >= 1 && check_every >= 1, "morphaug::grid_barycenter: max_iter and "
              "check_every must be positive, got ", max_iter, " and ", check_every);
  const at::Tensor h = log_hists.contiguous(), w = weights.contiguous();
  std::vector<at::Tensor> k;
  for (const at::Tensor& kernel : kernels) k.push_back(kernel.contiguous());
  std::vector<int64_t> bar_shape{h.size(0)};
  for (int64_t d = 2; d < h.dim(); ++d) bar_shape.push_back(h.size(d));
  at::Tensor log_bar = at::full(bar_shape, -std::log(static_cast<double>(h.numel() / (h.size(0) * h.size(1)))),
                                h.options());
  // a problem costs at least check_every iterations of 2 N soft-mins, each a
  // product per axis of its grids by that axis's kernel
  const int64_t numel = h.numel() / (h.size(0) * h.size(1));
  int64_t product = 0;
  for (int64_t d = 2; d < h.dim(); ++d) product += numel * h.size(d);
  AT_DISPATCH_FLOATING_TYPES(h.scalar_type(), "morphaug::grid_barycenter (CPU)", [&] {
    parallel_shares(h.size(0), 2 * h.size(1) * check_every * product, [&](int64_t begin, int64_t end) {
      iterate<scalar_t>(begin, end, h, w, k, max_iter, tol, check_every, log_bar);
    });
  });
  return log_bar;
}

}  // namespace morphaug
