#include "core/encode_stream.h"

#include <algorithm>
#include <stdexcept>

namespace lact {

ResidualStream::ResidualStream(Tensor x) : x_(std::move(x)), rows_(x_.dim(0)), cols_(x_.dim(1)) {}

ResidualStream::ResidualStream(Backend& be, int64_t rows, int64_t cols, int64_t chunk_rows, ResidualStore& store)
    : be_(&be), x_(be.empty({std::min(rows, chunk_rows), cols})), rows_(rows), cols_(cols), store_(&store) {}

Tensor& ResidualStream::whole() {
  if (spilled()) throw std::logic_error("the residual stream is spilled: no whole tensor");
  return x_;
}

void ResidualStream::write(int64_t first, const Tensor& values) {
  if (!spilled()) {
    Tensor rows = x_.slice(first, first + values.dim(0));
    values.backend()->copy(rows, values);
    return;
  }
  staging_.resize(static_cast<size_t>(values.numel()));
  be_->download(values, staging_.data());
  store_->write_rows(first, values.dim(0), cols_, staging_.data());
}

Tensor ResidualStream::load(int64_t first, int64_t count) {
  if (!spilled()) return x_.slice(first, first + count);
  Tensor rows = x_.slice(0, count);
  staging_.resize(static_cast<size_t>(count * cols_));
  store_->read_rows(first, count, cols_, staging_.data());
  be_->upload(rows, staging_.data());
  return rows;
}

void ResidualStream::write_back(int64_t first, const Tensor& loaded) {
  if (spilled()) write(first, loaded);
}

void ResidualChunks::each(const Pass& f, bool adds_output) const {
  Backend& be = whole_.be;
  for (int64_t begin = 0; begin < whole_.views; begin += chunk_) {
    const int64_t end = std::min(whole_.views, begin + chunk_), rows = (end - begin) * per_view_;
    Tensor x = x_.load(begin * per_view_, rows);
    Tensor y = y_.slice(0, rows);
    be.layer_norm(x, norm_, eps_, y);
    const ModuleContext chunk{be, whole_.config, whole_.weights, whole_.options, end - begin, whole_.collective};
    f(chunk, y, x);  // the module adds its output into x's rows
    if (adds_output) x_.write_back(begin * per_view_, x);
  }
}

}  // namespace lact
