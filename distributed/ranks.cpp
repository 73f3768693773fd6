// What every build has: the --distributed modes, agreement on failures, and the stubs of a build without MPI.
#include <algorithm>
#include <cstdlib>

#include "distributed/distributed.h"
#include "distributed/transports.h"
#include "system/error.h"

namespace lact {

DistributedMode parse_distributed_mode(const std::string& text) {
  if (text == "none" || text.empty()) return DistributedMode::None;
  if (text == "mpi") return DistributedMode::Mpi;
  if (text == "nccl") return DistributedMode::Nccl;
  throw Error("--distributed", "unknown mode '" + text.substr(0, 40) + "' (none | mpi | nccl)");
}

int launched_processes() {
  int most = 1;
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* value = std::getenv(name);
    if (!value) continue;
    char* end = nullptr;
    const long n = std::strtol(value, &end, 10);
    if (end != value && *end == '\0' && n > most && n < (1 << 24)) most = static_cast<int>(n);
  }
  return most;
}

std::string Ranks::label() const { return "rank " + std::to_string(rank()) + " of " + std::to_string(size()) + ": "; }

void Ranks::agree(const std::function<void()>& step) {
  std::string failure;
  try {
    step();
  } catch (const std::bad_alloc&) {
    failure = "out of memory";
  } catch (const std::exception& e) {
    failure = e.what();
    if (failure.empty()) failure = "failed";
  }
  throw_agreed_failure(all_gather_text(failure), rank());
}

void throw_agreed_failure(const std::vector<std::string>& failures, int rank) {
  const std::vector<std::string>& all = failures;
  // The same failure everywhere (a flag, a file every node shares) needs no rank in its line.
  if (!all[0].empty() && std::all_of(all.begin(), all.end(), [&](const std::string& t) { return t == all[0]; }))
    throw RankFailure(all[0], rank == 0);
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty())
      throw RankFailure("rank " + std::to_string(r) + " of " + std::to_string(all.size()) + ": " + all[r], rank == 0);
}

std::unique_ptr<Collective> make_collective(DistributedMode mode, Ranks& ranks, Backend& backend) {
  if (mode == DistributedMode::Nccl) return make_nccl_collective(ranks, backend);
  return make_mpi_collective(ranks);
}

std::string rank_device(DistributedMode mode, Ranks& ranks, const std::string& device) {
  return mode == DistributedMode::Nccl ? nccl_rank_device(ranks, device) : device;
}

}  // namespace lact
