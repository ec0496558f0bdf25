// CPU launcher of morphaug::sinkhorn_scaling: POT's Sinkhorn-Knopp on a batch
// of problems with one shared kernel, the whole loop in C++ (two GEMMs per
// iteration by ATen's BLAS, row loops from core/sinkhorn.h), so that no
// iteration pays Python's per-op overhead, and each thread iterates its own
// share of the problems.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/ones_like.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "../core/sinkhorn.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {
namespace {

// The whole loop for the problems (rows) [begin, end), on their rows of the
// outputs; `kernel_t` is K^T, contiguous, so that both products take the
// x @ M^T layout (the faster GEMM here).
template <typename T>
void scaling_rows(int64_t begin, int64_t end, const at::Tensor& a_all, const at::Tensor& b_all,
                  const at::Tensor& kernel, const at::Tensor& kernel_t, int64_t max_iter, double tol,
                  int64_t check_every, at::Tensor& q_f_all, at::Tensor& q_g_all, at::Tensor& u_all,
                  at::Tensor& scale_all, at::Tensor& n_iter_all) {
  const int64_t rows = end - begin, n = a_all.size(1), m = b_all.size(1);
  const at::Tensor a = a_all.narrow(0, begin, rows), b = b_all.narrow(0, begin, rows);
  at::Tensor q_f = q_f_all.narrow(0, begin, rows), q_g = q_g_all.narrow(0, begin, rows);
  at::Tensor u = u_all.narrow(0, begin, rows);
  at::Tensor k_u = at::empty({rows, m}, b.options()), b_over_q_g = at::empty({rows, m}, b.options());
  at::Tensor fresh_q_f = at::empty({rows, n}, a.options());
  const T *pa = a.data_ptr<T>(), *pb = b.data_ptr<T>(), *pfresh = fresh_q_f.data_ptr<T>();
  T *pq_f = q_f.data_ptr<T>(), *pq_g = q_g.data_ptr<T>(), *pu = u.data_ptr<T>();
  T *pk_u = k_u.data_ptr<T>(), *pw = b_over_q_g.data_ptr<T>();
  T* pscale = scale_all.data_ptr<T>() + begin;
  int64_t* done_at = n_iter_all.data_ptr<int64_t>() + begin;
  std::vector<uint8_t> active(rows, 1);
  int64_t n_active = rows;
  bool have_k_u = false;
  for (int64_t it = 0; it < max_iter; ++it) {
    // While every problem iterates, the products land in q_g / q_f directly;
    // then in scratch, copied to the problems still iterating.
    const bool all_active = n_active == rows;
    if (!have_k_u) {
      at::mm_out(all_active ? q_g : k_u, u, kernel_t.t());  // K^T u
    } else if (all_active) {
      q_g.copy_(k_u);
    }
    for (int64_t r = 0; r < rows; ++r) {
      if (!active[r]) continue;  // a converged problem keeps its state
      if (!all_active) std::copy(pk_u + r * m, pk_u + (r + 1) * m, pq_g + r * m);
      sinkhorn_divide<T>(pb + r * m, pq_g + r * m, pw + r * m, m);
    }
    at::mm_out(all_active ? q_f : fresh_q_f, b_over_q_g, kernel.t());  // K v
    for (int64_t r = 0; r < rows; ++r) {
      if (!active[r]) continue;
      if (!all_active) std::copy(pfresh + r * n, pfresh + (r + 1) * n, pq_f + r * n);
      pscale[r] = sinkhorn_scaled_ratio<T>(pa + r * n, pq_f + r * n, pu + r * n, n);
    }
    have_k_u = false;
    if (it % check_every != 0) continue;
    at::mm_out(k_u, u, kernel_t.t());  // reused by the next iteration
    have_k_u = true;
    for (int64_t r = 0; r < rows; ++r) {
      if (active[r] &&
          sinkhorn_marginal_error<T>(pw + r * m, pk_u + r * m, pscale[r], pb + r * m, m) < tol) {
        active[r] = 0;
        done_at[r] = it + 1;
        --n_active;
      }
    }
    if (n_active == 0) break;
  }
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> sinkhorn_scaling_cpu(
    const at::Tensor& a, const at::Tensor& b, const at::Tensor& kernel, int64_t max_iter, double tol,
    int64_t check_every) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && kernel.dim() == 2 && a.size(0) == b.size(0) &&
                  kernel.size(0) == a.size(1) && kernel.size(1) == b.size(1),
              "morphaug::sinkhorn_scaling: expected a (B, n), b (B, m) and kernel (n, m), got ",
              a.sizes(), ", ", b.sizes(), " and ", kernel.sizes());
  TORCH_CHECK(a.size(0) > 0 && a.size(1) > 0 && b.size(1) > 0,
              "morphaug::sinkhorn_scaling: empty problems, got a ", a.sizes(), " and b ", b.sizes());
  TORCH_CHECK((a.scalar_type() == at::kFloat || a.scalar_type() == at::kDouble) &&
                  b.scalar_type() == a.scalar_type() && kernel.scalar_type() == a.scalar_type(),
              "morphaug::sinkhorn_scaling: a, b and kernel must share a float32 or float64 dtype, got ",
              a.scalar_type(), ", ", b.scalar_type(), " and ", kernel.scalar_type());
  TORCH_CHECK(max_iter >= 1 && check_every >= 1, "morphaug::sinkhorn_scaling: max_iter and check_every "
              "must be positive, got ", max_iter, " and ", check_every);
  const at::Tensor ac = a.contiguous(), bc = b.contiguous(), kc = kernel.contiguous();
  at::Tensor q_f = at::empty_like(ac), q_g = at::empty_like(bc), u = at::ones_like(ac);
  at::Tensor scale = at::empty({a.size(0), 1}, ac.options());
  at::Tensor n_iter = at::full({a.size(0)}, max_iter, ac.options().dtype(at::kLong));
  // The problems are independent: each thread runs the whole loop on its
  // share of them (single-threaded GEMMs, no synchronisation per iteration;
  // parallel.h).
  const at::Tensor kernel_t = kc.t().contiguous();
  AT_DISPATCH_FLOATING_TYPES(ac.scalar_type(), "morphaug::sinkhorn_scaling (CPU)", [&] {
    // a problem costs at least check_every iterations of two products by the kernel
    parallel_shares(a.size(0), 2 * check_every * kc.numel(), [&](int64_t begin, int64_t end) {
      scaling_rows<scalar_t>(begin, end, ac, bc, kc, kernel_t, max_iter, tol, check_every, q_f, q_g,
                             u, scale, n_iter);
    });
  });
  return {q_f, q_g, u, scale, n_iter};
}

}  // namespace morphaug
