// Running one lact command as several processes (MPI ranks: mpirun, srun), optionally one GPU each (NCCL).
// Rank 0 prints and writes what one process would; every rank reads its own inputs. Nothing here includes MPI:
// lact builds without it, and then --distributed mpi|nccl says so.
#pragma once
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/collective.h"
#include "kernels/backend.h"

namespace lact {

enum class DistributedMode { None, Mpi, Nccl };

// "none" | "mpi" | "nccl"; throws Error naming --distributed.
DistributedMode parse_distributed_mode(const std::string& text);
// Whether this build has MPI (and NCCL).
bool mpi_built();
bool nccl_built();

// The processes of one run (MPI_COMM_WORLD) and the host-side exchanges the pipeline needs.
class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank's index among the ranks on its node (the GPU it takes under NCCL).
  virtual int local_rank() const = 0;
  // Every rank's text, in rank order, on every rank.
  virtual std::vector<std::string> all_gather_text(const std::string& text) = 0;
  // Rank 0's text on every rank.
  virtual std::string broadcast_text(const std::string& text) = 0;

  // Runs `step` on every rank. When it throws on any rank, it throws on every rank: a RankFailure carrying the
  // first failing rank's message as "rank R of P: ...", which rank 0 prints and the others do not (one line).
  void agree(const std::function<void()>& step);
  // "rank R of P: " (for messages).
  std::string label() const;
};

// An error every rank agreed on (Ranks::agree): printed by rank 0 only, every rank exits non-zero.
class RankFailure : public std::runtime_error {
 public:
  RankFailure(const std::string& what, bool print) : std::runtime_error(what), print_(print) {}
  bool print() const { return print_; }

 private:
  bool print_;
};

// How many processes the launcher that started this one started, from the environment it sets (Open MPI's
// mpirun: OMPI_COMM_WORLD_SIZE; MPICH's Hydra and srun --mpi=pmi2: PMI_SIZE); 1 when none did.
// SLURM's own variables are not read: a batch script's environment holds them for plain one-process runs too.
int launched_processes();

// Every rank's failure ("" for none), in rank order, as gathered on rank `rank`: throws the RankFailure Ranks::agree
// throws (the common line, or the first failing rank's), or returns when no rank failed.
void throw_agreed_failure(const std::vector<std::string>& failures, int rank);

// Starts the ranks of this run (MPI_Init once per process); throws Error when lact was built without MPI.
// The ranks stay up until finish_distributed().
Ranks& start_ranks(DistributedMode mode);
// The started ranks, or nullptr in a single-process run.
Ranks* current_ranks();
// The collective the model uses to encode across ranks: MPI (tensors through host memory) or NCCL (device
// memory, one GPU per rank, the communicator bootstrapped over MPI). Throws Error when not built or when the
// backend does not fit the mode (nccl needs --device cuda).
std::unique_ptr<Collective> make_collective(DistributedMode mode, Ranks& ranks, Backend& backend);

// The --device a rank uses under `mode`: for nccl, "cuda:<local rank mod the node's GPUs>"; else `device`.
std::string rank_device(DistributedMode mode, Ranks& ranks, const std::string& device);

// Ends the run's MPI at exit. After an error only this rank saw (not agreed), the other ranks may be waiting in
// a collective: abort them all (MPI_Abort) instead of hanging.
void finish_distributed(bool unagreed_error);

}  // namespace lact
