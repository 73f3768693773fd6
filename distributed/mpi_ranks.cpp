// The ranks and the tensor collective over MPI (Open MPI's libopenmpi-dev; launched by mpirun or srun).
#include <mpi.h>

#include <climits>
#include <cstdio>

#include "distributed/distributed.h"
#include "distributed/transports.h"
#include "system/error.h"

namespace lact {

namespace {

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string("MPI ") + what, std::string(text, length));
}

int message_count(int64_t count, const char* what) {
  if (count > INT_MAX) throw Error(std::string("MPI ") + what, "more than 2^31 values in one message");
  return static_cast<int>(count);
}

class MpiRanks final : public Ranks {
 public:
  MpiRanks() {
    int provided = 0;
    // Only the main thread calls MPI (OpenMP threads compute between the calls).
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "init");
    // Errors come back as codes (turned into lact::Error), not as MPI's own abort.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm node;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node), "split");
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_free(&node);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  std::vector<std::string> all_gather_text(const std::string& text) override {
    const int length = message_count(static_cast<int64_t>(text.size()), "text");
    std::vector<int> lengths(size_), offsets(size_);
    check_mpi(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD), "allgather");
    int64_t total = 0;
    for (int r = 0; r < size_; ++r) offsets[r] = static_cast<int>(total), total += lengths[r];
    std::string all(static_cast<size_t>(message_count(total, "text")), '\0');
    check_mpi(MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                             MPI_COMM_WORLD),
              "allgatherv");
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r) out.push_back(all.substr(offsets[r], lengths[r]));
    return out;
  }
  std::string broadcast_text(const std::string& text) override {
    int length = message_count(static_cast<int64_t>(text.size()), "text");
    check_mpi(MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD), "bcast");
    std::string out = rank_ == 0 ? text : std::string(static_cast<size_t>(length), '\0');
    check_mpi(MPI_Bcast(out.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD), "bcast");
    return out;
  }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0;
};

// Tensors travel through host memory (to_host / upload), so any backend works; NCCL keeps them on the GPU.
class MpiCollective final : public Collective {
 public:
  explicit MpiCollective(Ranks& ranks) : ranks_(ranks) {}
  int rank() const override { return ranks_.rank(); }
  int size() const override { return ranks_.size(); }
  void all_reduce_sum(Backend& be, Tensor& t) override {
    std::vector<float> host = be.to_host(t);
    const int count = message_count(t.numel(), "all-reduce");
    // Reduce on rank 0, then broadcast: every rank gets rank 0's sum bit for bit (MPI_Allreduce does not
    // promise the same rounding on every rank, and Newton-Schulz would amplify a difference).
    if (rank() == 0)
      check_mpi(MPI_Reduce(MPI_IN_PLACE, host.data(), count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD), "reduce");
    else
      check_mpi(MPI_Reduce(host.data(), nullptr, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD), "reduce");
    check_mpi(MPI_Bcast(host.data(), count, MPI_FLOAT, 0, MPI_COMM_WORLD), "bcast");
    be.upload(t, host.data());
    bytes_ += t.numel() * static_cast<int64_t>(sizeof(float));
  }
  Tensor all_gather(Backend& be, const Tensor& local) override {
    const std::vector<int64_t> counts = all_gather_counts(local.numel());
    std::vector<int> sizes(size()), offsets(size());
    int64_t total = 0;
    for (int r = 0; r < size(); ++r) {
      sizes[r] = message_count(counts[r], "all-gather");
      offsets[r] = message_count(total, "all-gather");
      total += counts[r];
    }
    const std::vector<float> mine = be.to_host(local);
    std::vector<float> all(static_cast<size_t>(total));
    check_mpi(MPI_Allgatherv(mine.data(), sizes[rank()], MPI_FLOAT, all.data(), sizes.data(), offsets.data(), MPI_FLOAT,
                             MPI_COMM_WORLD),
              "allgatherv");
    bytes_ += local.numel() * static_cast<int64_t>(sizeof(float));
    return be.from_host({total}, all.data());
  }
  std::vector<int64_t> all_gather_counts(int64_t count) override {
    std::vector<int64_t> counts(size());
    check_mpi(MPI_Allgather(&count, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, MPI_COMM_WORLD), "allgather");
    return counts;
  }

 private:
  Ranks& ranks_;
};

std::unique_ptr<MpiRanks> g_ranks;

}  // namespace

bool mpi_built() { return true; }

Ranks& start_ranks(DistributedMode mode) {
  if (mode == DistributedMode::Nccl && !nccl_built())
    throw Error("--distributed nccl",
                "this build of lact has no NCCL (it needs the CUDA backend and nccl.h from CUDA)");
  if (!g_ranks) g_ranks = std::make_unique<MpiRanks>();
  return *g_ranks;
}

Ranks* current_ranks() { return g_ranks.get(); }

std::unique_ptr<Collective> make_mpi_collective(Ranks& ranks) { return std::make_unique<MpiCollective>(ranks); }

void finish_distributed(bool unagreed_error) {
  if (!g_ranks) return;
  std::fflush(stdout);
  std::fflush(stderr);
  if (unagreed_error && g_ranks->size() > 1) MPI_Abort(MPI_COMM_WORLD, 1);  // the others may wait on this rank
  g_ranks.reset();
  MPI_Finalize();
}

}  // namespace lact
