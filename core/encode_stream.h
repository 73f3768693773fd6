// The streamed encode's chunks of views (core/block_module.h's ViewChunks over the residual stream): each chunk's
// y = LayerNorm(x rows) made in one chunk-sized buffer, its module output added back to its rows of x. Only x
// grows with the views; every module's scratch is a chunk's.
#pragma once

#include "core/block_module.h"

namespace lact {

class ResidualChunks final : public ViewChunks {
 public:
  // `whole`: the module's context over every view of x (`whole.views` views of `per_view` tokens each); y and
  // out hold at least chunk_views * per_view rows.
  ResidualChunks(const ModuleContext& whole, Tensor& x, const Tensor& norm, float eps, int64_t per_view,
                 int64_t chunk_views, Tensor& y, Tensor& out)
      : whole_(whole), x_(x), norm_(norm), eps_(eps), per_view_(per_view), chunk_(chunk_views), y_(y), out_(out) {}
  void each(const Pass& f, bool adds_output) const override;
  int64_t count() const override { return (whole_.views + chunk_ - 1) / chunk_; }

 private:
  const ModuleContext& whole_;
  Tensor& x_;
  const Tensor& norm_;
  float eps_;
  int64_t per_view_, chunk_;
  Tensor &y_, &out_;
};

}  // namespace lact
