// The tensor collective over NCCL: device memory, one GPU per rank, the communicator's id sent over MPI.
// NCCL itself is opened at first use (dlopen): lact starts where it is missing, and only --distributed nccl
// needs it.
#include <cuda_runtime.h>
#include <nccl.h>

#include "distributed/transports.h"
#include "system/dynamic_library.h"
#include "system/error.h"

#ifndef LACT_NCCL_DIR
#define LACT_NCCL_DIR ""
#endif

namespace lact {

namespace {

struct NcclApi {
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRank) comm_init_rank;
  decltype(&ncclCommDestroy) comm_destroy;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  decltype(&ncclGetErrorString) error_string;
};

// Loaded once: the library path's libnccl.so.2, else the one of the CUDA toolkit lact was built with.
const NcclApi& nccl() {
  static const NcclApi api = [] {
    try {
      const std::string toolkit = *LACT_NCCL_DIR ? std::string(LACT_NCCL_DIR) + "/libnccl.so.2" : "";
      const DynamicLibrary library({"libnccl.so.2", toolkit}, "NCCL; put its folder on LD_LIBRARY_PATH");
      NcclApi a{};
      library.resolve("ncclGetUniqueId", a.get_unique_id);
      library.resolve("ncclCommInitRank", a.comm_init_rank);
      library.resolve("ncclCommDestroy", a.comm_destroy);
      library.resolve("ncclAllReduce", a.all_reduce);
      library.resolve("ncclBroadcast", a.broadcast);
      library.resolve("ncclGroupStart", a.group_start);
      library.resolve("ncclGroupEnd", a.group_end);
      library.resolve("ncclGetErrorString", a.error_string);
      return a;
    } catch (const std::runtime_error& e) {
      throw Error("--distributed nccl", e.what());
    }
  }();
  return api;
}

void check_nccl(ncclResult_t code, const char* what) {
  if (code != ncclSuccess) throw Error(std::string("NCCL ") + what, nccl().error_string(code));
}
void check_cuda(cudaError_t code, const char* what) {
  if (code != cudaSuccess) throw Error(std::string("CUDA ") + what, cudaGetErrorString(code));
}

// The backend's work is on its own stream; the collectives run on this one between synchronizations, so
// each sees finished operands and leaves finished results.
class NcclCollective final : public Collective {
 public:
  NcclCollective(Ranks& ranks, Backend& backend) : ranks_(ranks) {
    if (backend.name().rfind("cuda", 0) != 0)
      throw Error("--distributed nccl",
                  "needs --device cuda (NCCL moves GPU memory); use --distributed mpi on the " + backend.name());
    ncclUniqueId id{};
    if (ranks.rank() == 0) check_nccl(nccl().get_unique_id(&id), "unique id");
    const std::string sent = ranks.broadcast_text(std::string(reinterpret_cast<const char*>(&id), sizeof id));
    std::copy(sent.begin(), sent.end(), reinterpret_cast<char*>(&id));
    check_nccl(nccl().comm_init_rank(&comm_, ranks.size(), id, ranks.rank()), "init");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
  }
  ~NcclCollective() override {
    cudaStreamDestroy(stream_);
    nccl().comm_destroy(comm_);
  }
  int rank() const override { return ranks_.rank(); }
  int size() const override { return ranks_.size(); }
  // Ring and tree all-reduce reduce each element once and send the result to every rank: the same bits
  // everywhere.
  void all_reduce_sum(Backend& be, Tensor& t) override {
    be.synchronize();
    check_nccl(
        nccl().all_reduce(t.data(), t.data(), static_cast<size_t>(t.numel()), ncclFloat, ncclSum, comm_, stream_),
        "all-reduce");
    check_cuda(cudaStreamSynchronize(stream_), "all-reduce");
    bytes_ += t.numel() * static_cast<int64_t>(sizeof(float));
  }
  // Ranks hold different counts: one broadcast per rank, grouped.
  Tensor all_gather(Backend& be, const Tensor& local) override {
    const std::vector<int64_t> counts = all_gather_counts(local.numel());
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    Tensor all = be.empty({total});
    be.synchronize();
    check_nccl(nccl().group_start(), "group");
    int64_t offset = 0;
    for (int r = 0; r < size(); ++r) {
      check_nccl(nccl().broadcast(local.data(), all.data() + offset, static_cast<size_t>(counts[r]), ncclFloat, r,
                                  comm_, stream_),
                 "broadcast");
      offset += counts[r];
    }
    check_nccl(nccl().group_end(), "group");
    check_cuda(cudaStreamSynchronize(stream_), "all-gather");
    bytes_ += local.numel() * static_cast<int64_t>(sizeof(float));
    return all;
  }
  std::vector<int64_t> all_gather_counts(int64_t count) override {
    std::vector<int64_t> counts;
    for (const std::string& text : ranks_.all_gather_text(std::to_string(count))) counts.push_back(std::stoll(text));
    return counts;
  }

 private:
  Ranks& ranks_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

bool nccl_built() { return true; }

std::unique_ptr<Collective> make_nccl_collective(Ranks& ranks, Backend& backend) {
  return std::make_unique<NcclCollective>(ranks, backend);
}

std::string nccl_rank_device(Ranks& ranks, const std::string& device) {
  if (device.rfind("cuda", 0) != 0)
    throw Error("--distributed nccl", "needs --device cuda (one GPU per rank), not " + device.substr(0, 20));
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count <= 0)
    throw Error("--distributed nccl", std::string("no usable CUDA device on this node (") +
                                          (status != cudaSuccess ? cudaGetErrorString(status) : "none found") + ")");
  return "cuda:" + std::to_string(ranks.local_rank() % count);
}

}  // namespace lact
