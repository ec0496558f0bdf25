// CPU launcher of morphaug::thinning2d: scikit-image's 2-D table thinnings (skeletonize "zhang",
// thin) of every slice, bit for bit, slices in parallel, each to its fixpoint (or the iteration
// budget) inside the kernel.
//
// Only a border pixel (foreground with a background 8-neighbour, code != 255) can go, so each
// sub-iteration visits a list of them rather than the whole slice: their codes are read first
// (the parallel step: every decision on the image as it was), then the doomed pixels are cleared,
// dropped from the list, and their foreground neighbours not yet listed join it. The slice is
// thinned in the output itself; bit 1 of a byte marks a listed pixel until the end.
#include <ATen/core/Tensor.h>
#include <ATen/ops/scalar_tensor.h>

#include <cstdint>
#include <cstring>
#include <tuple>
#include <vector>

#include "../launch.h"
#include "fresh.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {
namespace {

constexpr uint8_t kListed = 2;

struct Pixel {
  int32_t y, x;
};

// One slice at a time, its lists reused from slice to slice.
class Thinner {
 public:
  // Thins the h x w slice `image` (0/1 bytes) in place; returns the pixels its last iteration
  // deleted (0 where it reached its fixpoint within `iterations`).
  int64_t run(uint8_t* image, int32_t h, int32_t w, const ThinningTables& t, int64_t iterations) {
    image_ = image, h_ = h, w_ = w;
    border_.clear();
    for (int32_t y = 0; y < h; ++y)
      for (int32_t x = 0; x < w; ++x)
        if (image[y * w + x] && code({y, x}) != 255u) list({y, x});
    int64_t last = 0;
    for (int64_t iteration = 0; iteration < iterations; ++iteration) {
      last = 0;
      for (int pass = 0; pass < 2; ++pass) last += step(t, pass);
      if (last == 0) break;
    }
    for (const Pixel p : border_) image[p.y * w + p.x] &= 1;
    return last;
  }

 private:
  uint8_t& at(Pixel p) { return image_[p.y * w_ + p.x]; }

  unsigned code(Pixel p) const {
    const uint8_t* row = image_ + static_cast<int64_t>(p.y) * w_;
    return thinning_code(p.y > 0 ? row - w_ : nullptr, row, p.y + 1 < h_ ? row + w_ : nullptr, p.x, w_, 0);
  }

  void list(Pixel p) {
    at(p) |= kListed;
    border_.push_back(p);
  }

  // One sub-iteration: the pixels it deleted.
  int64_t step(const ThinningTables& t, int pass) {
    doomed_.clear();
    for (const Pixel p : border_)
      if (t.deletes(pass, code(p))) doomed_.push_back(p);
    for (const Pixel p : doomed_) at(p) = 0;
    size_t kept = 0;
    for (const Pixel p : border_)
      if (at(p)) border_[kept++] = p;
    border_.resize(kept);
    for (const Pixel p : doomed_)
      for (int32_t y = p.y - 1; y <= p.y + 1; ++y)
        for (int32_t x = p.x - 1; x <= p.x + 1; ++x)
          if (y >= 0 && y < h_ && x >= 0 && x < w_ && at({y, x}) == 1) list({y, x});
    return static_cast<int64_t>(doomed_.size());
  }

  uint8_t* image_ = nullptr;
  int32_t h_ = 0, w_ = 0;
  std::vector<Pixel> border_, doomed_;
};

}  // namespace

std::tuple<at::Tensor, at::Tensor> thinning2d_cpu(const at::Tensor& mask, at::IntArrayRef tables,
                                                  int64_t iterations) {
  const ThinningTables t = thinning2d_setup(mask, tables, iterations);
  const at::Tensor m = mask.contiguous();
  at::Tensor out = fresh_empty(m.sizes(), m.options());
  const int32_t h = static_cast<int32_t>(m.size(2)), w = static_cast<int32_t>(m.size(3));
  const int64_t pixels = int64_t{h} * w, slices = m.size(0) * m.size(1);
  const uint8_t* in = reinterpret_cast<const uint8_t*>(m.data_ptr<bool>());
  uint8_t* o = reinterpret_cast<uint8_t*>(out.data_ptr<bool>());
  std::vector<int64_t> last(static_cast<size_t>(slices), 0);
  parallel_over(slices, pixels * 16, [&](int64_t begin, int64_t end) {
    Thinner thinner;
    for (int64_t s = begin; s < end; ++s) {
      std::memcpy(o + s * pixels, in + s * pixels, static_cast<size_t>(pixels));
      last[static_cast<size_t>(s)] = thinner.run(o + s * pixels, h, w, t, iterations);
    }
  });
  int64_t deleted = 0;
  for (const int64_t n : last) deleted += n;
  return {out, at::scalar_tensor(deleted, m.options().dtype(at::kLong))};
}

}  // namespace morphaug
