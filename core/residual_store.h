// Where a streamed encode keeps its residual stream (the tokens between layers, the one buffer that grows with the
// views) when it does not fit in memory: rows written and read back a chunk of views at a time. The model only
// calls these; the pipeline's scratch file (pipeline/scratch_file.h, lact --scratch) does the I/O.
#pragma once

#include <cstdint>

namespace lact {

class ResidualStore {
 public:
  virtual ~ResidualStore() = default;
  // Rows [first, first + count) of `cols` floats each, row-major.
  virtual void write_rows(int64_t first, int64_t count, int64_t cols, const float* values) = 0;
  virtual void read_rows(int64_t first, int64_t count, int64_t cols, float* values) = 0;
};

}  // namespace lact
