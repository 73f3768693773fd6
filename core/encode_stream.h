// The streamed encode's chunks of views (core/block_module.h's ViewChunks over the residual stream): each chunk's
// y = LayerNorm(x rows) made in one chunk-sized buffer, the module adding its output into its rows of x. Only x
// grows with the views; every module's scratch is a chunk's. Where x does not fit in memory either, it is kept
// in a ResidualStore (core/residual_store.h) and a chunk of it at a time is read in and written back.
#pragma once

#include <memory>
#include <vector>

#include "core/block_module.h"
#include "core/residual_store.h"

namespace lact {

// The residual stream x [rows, cols]: a tensor, or (spilled) rows in a store with one chunk's buffer in memory.
class ResidualStream {
 public:
  explicit ResidualStream(Tensor x);
  // Spilled: `chunk_rows` rows at most are in memory at once.
  ResidualStream(Backend& be, int64_t rows, int64_t cols, int64_t chunk_rows, ResidualStore& store);
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  bool spilled() const { return store_ != nullptr; }
  // Every row as one tensor: the stream in memory only (an internal error when spilled).
  Tensor& whole();
  // `values` [count, cols] become rows [first, first + count).
  void write(int64_t first, const Tensor& values);
  // Rows [first, first + count): a slice of x in memory (changing it changes x), or read into the chunk buffer
  // (at most chunk_rows; changes reach the store through write_back).
  Tensor load(int64_t first, int64_t count);
  // After load() and a change to its rows: spilled, written to the store; in memory there is nothing to do.
  void write_back(int64_t first, const Tensor& loaded);

 private:
  Backend* be_ = nullptr;
  Tensor x_;  // in memory: the stream; spilled: the chunk buffer
  int64_t rows_ = 0, cols_ = 0;
  ResidualStore* store_ = nullptr;
  std::vector<float> staging_;  // spilled: a chunk's rows on the host, between the store and the backend
};

class ResidualChunks final : public ViewChunks {
 public:
  // `whole`: the module's context over every view of x (`whole.views` views of `per_view` tokens each); y holds
  // at least chunk_views * per_view rows.
  ResidualChunks(const ModuleContext& whole, ResidualStream& x, const Tensor& norm, float eps, int64_t per_view,
                 int64_t chunk_views, Tensor& y)
      : whole_(whole), x_(x), norm_(norm), eps_(eps), per_view_(per_view), chunk_(chunk_views), y_(y) {}
  void each(const Pass& f, bool adds_output) const override;
  int64_t count() const override { return (whole_.views + chunk_ - 1) / chunk_; }

 private:
  const ModuleContext& whole_;
  ResidualStream& x_;
  const Tensor& norm_;
  float eps_;
  int64_t per_view_, chunk_;
  Tensor& y_;
};

}  // namespace lact
