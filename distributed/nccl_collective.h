// The NCCL collective (distributed/nccl_collective.cpp when built with CUDA and NCCL; otherwise refusals).
#pragma once
#include <memory>
#include <string>

#include "distributed/distributed.h"

namespace lact {

std::unique_ptr<Collective> make_nccl_collective(Ranks& ranks, Backend& backend);
// "cuda:<local rank mod GPUs on the node>"; refuses a device other than cuda.
std::string nccl_rank_device(Ranks& ranks, const std::string& device);

}  // namespace lact
