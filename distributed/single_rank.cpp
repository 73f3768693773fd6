// A build without MPI: one process. --distributed mpi is refused with the reason; --distributed nccl runs as
// the one rank of itself (the NCCL path on one GPU, where no MPI is installed).
#include "distributed/transports.h"
#include "system/error.h"

namespace lact {

namespace {

const char* kWhy = "this build of lact has no MPI (install libopenmpi-dev, as scripts/setup.sh does, and rebuild)";

class OneRank final : public Ranks {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::vector<std::string> all_gather_text(const std::string& text) override { return {text}; }
  std::string broadcast_text(const std::string& text) override { return text; }
};

std::unique_ptr<OneRank> g_rank;

}  // namespace

bool mpi_built() { return false; }

Ranks& start_ranks(DistributedMode mode) {
  if (mode != DistributedMode::Nccl) throw Error("--distributed mpi", kWhy);
  if (!nccl_built())
    throw Error("--distributed nccl",
                "this build of lact has no NCCL (it needs the CUDA backend and nccl.h from CUDA)");
  if (!g_rank) g_rank = std::make_unique<OneRank>();
  return *g_rank;
}

Ranks* current_ranks() { return g_rank.get(); }

std::unique_ptr<Collective> make_mpi_collective(Ranks&) { throw Error("--distributed mpi", kWhy); }

void finish_distributed(bool) { g_rank.reset(); }

}  // namespace lact
