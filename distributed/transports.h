// The transports behind distributed.h, each in its own file: MPI (mpi_ranks.cpp, or refusals in
// single_rank.cpp when built without MPI) and NCCL (nccl_collective.cpp, or refusals in no_nccl.cpp).
#pragma once
#include <memory>
#include <string>

#include "distributed/distributed.h"

namespace lact {

std::unique_ptr<Collective> make_mpi_collective(Ranks& ranks);
std::unique_ptr<Collective> make_nccl_collective(Ranks& ranks, Backend& backend);
// "cuda:<local rank mod GPUs on the node>"; refuses a device other than cuda.
std::string nccl_rank_device(Ranks& ranks, const std::string& device);

}  // namespace lact
