#include "core/encode_stream.h"

#include <algorithm>

namespace lact {

void ResidualChunks::each(const Pass& f, bool adds_output) const {
  Backend& be = whole_.be;
  for (int64_t begin = 0; begin < whole_.views; begin += chunk_) {
    const int64_t end = std::min(whole_.views, begin + chunk_), rows = (end - begin) * per_view_;
    Tensor x = x_.slice(begin * per_view_, end * per_view_);
    Tensor y = y_.slice(0, rows), out = out_.slice(0, rows);
    be.layer_norm(x, norm_, eps_, y);
    const ModuleContext chunk{be, whole_.config, whole_.weights, whole_.options, end - begin, whole_.collective};
    f(chunk, y, out);
    if (adds_output) be.add(x, out);
  }
}

}  // namespace lact
