// A build without MPI: single-process runs only; --distributed mpi|nccl is refused with the reason.
#include "core/error.h"
#include "distributed/distributed.h"

namespace lact {

namespace {
const char* kWhy = "this build of lact has no MPI (install libopenmpi-dev, as scripts/setup.sh does, and rebuild)";
}

bool mpi_built() { return false; }
bool nccl_built() { return false; }
Ranks& start_ranks(DistributedMode) { throw Error("--distributed", kWhy); }
Ranks* current_ranks() { return nullptr; }
std::unique_ptr<Collective> make_collective(DistributedMode, Ranks&, Backend&) { throw Error("--distributed", kWhy); }
std::string rank_device(DistributedMode, Ranks&, const std::string& device) { return device; }
void finish_distributed(bool) {}

}  // namespace lact
