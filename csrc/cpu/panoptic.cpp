// CPU launcher of morphaug::panoptic_confusion (core/panoptic.h): the slices
// in parallel, each in one raster pass. Each slice numbers its ids, and its
// pairs of overlapping ids, in the order they first appear (IdNumbers: open
// addressing from panoptic_home, doubled when half full) and counts areas and
// intersections by those numbers; a voxel looks an id up only where it
// differs from the previous voxel's.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "../panoptic_setup.h"
#include "launchers.h"
#include "parallel.h"

namespace morphaug {
namespace {

// The nonzero keys of a slice, numbered 0, 1, ... in the order they first appear.
class IdNumbers {
 public:
  // The number of `key` (nonzero), the next one if it is new.
  uint32_t number(uint64_t key) {
    const uint32_t capacity = static_cast<uint32_t>(slots_.size());
    for (uint32_t s = panoptic_home(key, capacity);; s = s + 1 == capacity ? 0 : s + 1) {
      if (slots_[s] == 0) {
        slots_[s] = key;
        numbers_[s] = static_cast<uint32_t>(keys_.size());
        keys_.push_back(key);
        if (2 * keys_.size() > slots_.size()) grow();
        return static_cast<uint32_t>(keys_.size() - 1);
      }
      if (slots_[s] == key) return numbers_[s];
    }
  }

  // The keys, by number.
  const std::vector<uint64_t>& keys() const { return keys_; }

 private:
  void grow() {
    const std::vector<uint64_t> keys = keys_;
    slots_.assign(2 * slots_.size(), 0);
    numbers_.assign(slots_.size(), 0);
    keys_.clear();
    for (const uint64_t key : keys) number(key);
  }

  std::vector<uint64_t> slots_ = std::vector<uint64_t>(64, 0);
  std::vector<uint32_t> numbers_ = std::vector<uint32_t>(64, 0);
  std::vector<uint64_t> keys_;
};

// A counter per number: counts[number(key)] += 1.
void tally(IdNumbers& ids, std::vector<int64_t>& counts, uint64_t key, uint32_t* number) {
  *number = ids.number(key);
  if (*number == counts.size()) counts.push_back(0);
  ++counts[*number];
}

// [tp, fp, fn, the matched IoUs' sum] of one slice of `n` voxels.
template <typename T>
void slice_confusion(const T* pred, const T* ref, int64_t n, float threshold, float* out) {
  IdNumbers preds, refs, pairs;
  std::vector<int64_t> pred_area, ref_area, inter;
  uint64_t last_p = 0, last_r = 0, last_pair = 0;
  uint32_t np = 0, nr = 0, npair = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t p = instance_key(pred[i]), r = instance_key(ref[i]);
    if (p != 0) {
      if (p == last_p) ++pred_area[np]; else tally(preds, pred_area, p, &np);
    }
    if (r != 0) {
      if (r == last_r) ++ref_area[nr]; else tally(refs, ref_area, r, &nr);
    }
    last_p = p;
    last_r = r;
    if (p != 0 && r != 0) {
      const uint64_t pair = pair_key(np, nr);
      if (pair == last_pair) ++inter[npair]; else tally(pairs, inter, pair, &npair);
      last_pair = pair;
    } else {
      last_pair = 0;
    }
  }
  int64_t tp = 0;
  int64_t units = 0;
  for (size_t k = 0; k < inter.size(); ++k) {
    const uint64_t pair = pairs.keys()[k];
    float iou;
    if (panoptic_match(inter[k], pred_area[pair_pred(pair)], ref_area[pair_ref(pair)], threshold, &iou)) {
      ++tp;
      units += iou_units(iou);
    }
  }
  out[0] = static_cast<float>(tp);
  out[1] = static_cast<float>(static_cast<int64_t>(pred_area.size()) - tp);
  out[2] = static_cast<float>(static_cast<int64_t>(ref_area.size()) - tp);
  out[3] = iou_sum(units);
}

}  // namespace

at::Tensor panoptic_confusion_cpu(const at::Tensor& pred, const at::Tensor& ref, double threshold) {
  const PanopticSetup setup = panoptic_setup(pred, ref, threshold);
  float* out = setup.out.data_ptr<float>();
  dispatch_ids(setup.pred, "panoptic_confusion", [&](auto type) {
    using T = decltype(type);
    const T* p = static_cast<const T*>(setup.pred.const_data_ptr());
    const T* r = static_cast<const T*>(setup.ref.const_data_ptr());
    parallel_over(setup.slices, setup.slice, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        slice_confusion(p + s * setup.slice, r + s * setup.slice, setup.slice, setup.threshold, out + 4 * s);
      }
    });
  });
  return setup.out;
}

}  // namespace morphaug
