// A build with MPI but without NCCL (no CUDA backend): --distributed nccl is refused with the reason.
#include "distributed/transports.h"
#include "system/error.h"

namespace lact {

namespace {
const char* kWhy = "this build of lact has no NCCL (it needs the CUDA backend and nccl.h from CUDA)";
}

bool nccl_built() { return false; }
std::unique_ptr<Collective> make_nccl_collective(Ranks&, Backend&) { throw Error("--distributed nccl", kWhy); }
std::string nccl_rank_device(Ranks&, const std::string&) { throw Error("--distributed nccl", kWhy); }

}  // namespace lact
