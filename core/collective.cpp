#include "core/collective.h"

#include "system/error.h"

namespace lact {

std::pair<int64_t, int64_t> rank_share(int64_t count, int ranks, int rank) {
  if (ranks <= 0 || rank < 0 || rank >= ranks)
    throw Error("rank " + std::to_string(rank) + " of " + std::to_string(ranks));
  const int64_t base = count / ranks, extra = count % ranks;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

int64_t sum_over_ranks(Collective* collective, int64_t count) {
  if (!collective) return count;
  int64_t total = 0;
  for (int64_t c : collective->all_gather_counts(count)) total += c;
  return total;
}

Tensor gather_token_rows(Backend& be, Collective* collective, const Tensor& t) {
  if (!collective || collective->size() == 1) return t;
  const int64_t batch = t.dim(0), cols = t.dim(2);
  const std::vector<int64_t> rows = collective->all_gather_counts(t.dim(1));
  int64_t total = 0;
  for (int64_t r : rows) total += r;
  const Tensor flat = collective->all_gather(be, t);
  Tensor out = be.empty({batch, total, cols});
  int64_t offset = 0;  // rows before rank r's
  for (int64_t n : rows) {
    // Rank r's block is [batch, n, cols] at flat offset batch * offset * cols.
    if (n > 0)
      be.copy_blocks(out.data() + offset * cols, total * cols, flat.data() + batch * offset * cols, n * cols, n * cols,
                     batch);
    offset += n;
  }
  return out;
}

}  // namespace lact
