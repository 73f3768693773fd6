// How the ranks of a distributed run exchange tensors while encoding one scene (context parallelism: each rank
// holds the tokens of its share of the input views). The model sees only this interface; MPI and NCCL
// implement it in distributed/. A null Collective* means one process.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/backend.h"

namespace lact {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // t summed over every rank, in place; afterwards every rank holds the same values, bit for bit.
  virtual void all_reduce_sum(Backend& be, Tensor& t) = 0;
  // Every rank's `local` (any shape) concatenated in rank order, flat.
  virtual Tensor all_gather(Backend& be, const Tensor& local) = 0;
  // Every rank's count, in rank order.
  virtual std::vector<int64_t> all_gather_counts(int64_t count) = 0;
  // Payload bytes this rank has handed to all_reduce_sum and all_gather so far (the bench's volume column).
  int64_t bytes_communicated() const { return bytes_; }

 protected:
  int64_t bytes_ = 0;
};

// Rank `rank`'s share [begin, end) of `count` items split into `ranks` contiguous parts whose sizes differ by
// at most one (the first count % ranks parts one larger).
std::pair<int64_t, int64_t> rank_share(int64_t count, int ranks, int rank);

// t [batch, n_r, cols] on every rank -> [batch, sum of n_r, cols]: the rows of every rank in rank order, per
// batch entry (a head's tokens from every rank). With a null collective, t itself.
Tensor gather_token_rows(Backend& be, Collective* collective, const Tensor& t);

// The sum of `count` over the ranks (count itself with a null collective).
int64_t sum_over_ranks(Collective* collective, int64_t count);

}  // namespace lact
