#include "kernels/cuda/cudnn_sdpa.h"

#include <cuda_runtime_api.h>

#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/cudnn_library.h"
#include "kernels/cuda/cudnn_sdpa_plan.h"

namespace lact::cuda {

namespace {

// A cuDNN call's status as one line: the call, cuDNN's status name and its last error message.
void check(const CudnnLibrary& lib, cudnnStatus_t status, const std::string& what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  char message[512] = {0};
  lib.last_error(message, sizeof message);
  std::string text = "cuDNN " + what + ": " + lib.error_string(status);
  if (message[0]) text += std::string(" (") + message + ")";
  throw std::runtime_error(text);
}

// One backend descriptor, destroyed with the object.
class Descriptor {
 public:
  Descriptor(const CudnnLibrary& lib, cudnnBackendDescriptorType_t type) : lib_(&lib) {
    check(lib, lib.create_descriptor(type, &handle_), "create descriptor " + std::to_string(int(type)));
  }
  ~Descriptor() {
    if (handle_) lib_->destroy_descriptor(handle_);
  }
  Descriptor(Descriptor&& o) noexcept : lib_(o.lib_), handle_(std::exchange(o.handle_, nullptr)) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Descriptor& operator=(Descriptor&&) = delete;

  cudnnBackendDescriptor_t get() const { return handle_; }
  template <typename T>
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values, int64_t count = 1) {
    check(*lib_, lib_->set_attribute(handle_, name, type, count, values), "set attribute " + std::to_string(int(name)));
  }
  void set(cudnnBackendAttributeName_t name, const Descriptor& d) {
    const cudnnBackendDescriptor_t h = d.get();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &h);
  }
  void finalize(const std::string& what) { check(*lib_, lib_->finalize(handle_), "finalize " + what); }

 private:
  const CudnnLibrary* lib_;
  cudnnBackendDescriptor_t handle_ = nullptr;
};

Descriptor bf16_tensor(const CudnnLibrary& lib, const SdpaTensorPlan& t) {
  Descriptor d(lib, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t type = CUDNN_DATA_BFLOAT16;
  const int64_t alignment = 16;
  d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type);
  d.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, t.dims.data(), 4);
  d.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, t.strides.data(), 4);
  d.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &t.uid);
  d.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment);
  d.finalize("tensor " + std::to_string(t.uid));
  return d;
}

// The softmax scale: a float passed by value at execution (a host pointer in the variant pack), so one plan serves
// every scale.
Descriptor scale_tensor(const CudnnLibrary& lib, int64_t uid) {
  Descriptor d(lib, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t type = CUDNN_DATA_FLOAT;
  const int64_t ones[4] = {1, 1, 1, 1}, alignment = 4;
  const bool by_value = true;
  d.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type);
  d.set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, ones, 4);
  d.set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, ones, 4);
  d.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid);
  d.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment);
  d.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &by_value);
  d.finalize("scale tensor");
  return d;
}

// A finalized execution plan and everything it was built from (kept alive with it).
struct Plan {
  std::deque<Descriptor> parts;  // a deque: references to its elements stay valid as it grows
  std::vector<Descriptor> plan;  // one: the execution plan
  int64_t workspace = 0;
};

// One SDPA forward node (no stats tensor: inference) over the plan's tensors: the five tensor descriptors, then
// the operation, appended to `parts` (the operation last). Needs no handle.
void build_operation(const CudnnLibrary& lib, const SdpaGraphPlan& layout, std::deque<Descriptor>& parts) {
  const size_t first = parts.size();
  parts.push_back(bf16_tensor(lib, layout.q));
  parts.push_back(bf16_tensor(lib, layout.k));
  parts.push_back(bf16_tensor(lib, layout.v));
  parts.push_back(bf16_tensor(lib, layout.o));
  parts.push_back(scale_tensor(lib, layout.scale_uid));
  Descriptor op(lib, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
  op.set(CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, parts[first]);
  op.set(CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, parts[first + 1]);
  op.set(CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, parts[first + 2]);
  op.set(CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, parts[first + 3]);
  op.set(CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, parts[first + 4]);
  op.finalize("SDPA forward operation");
  parts.push_back(std::move(op));
}

// The operation graph of the one node.
void build_graph(const CudnnLibrary& lib, cudnnHandle_t handle, const SdpaGraphPlan& layout, Plan& out) {
  build_operation(lib, layout, out.parts);
  Descriptor graph(lib, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, out.parts.back());
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle);
  graph.finalize("operation graph");
  out.parts.push_back(std::move(graph));
}

// The engine configs the heuristics rank for the graph, best first.
std::vector<Descriptor> engine_configs(const CudnnLibrary& lib, const Descriptor& graph, Plan& plan,
                                       cudnnBackendHeurMode_t mode) {
  Descriptor heuristics(lib, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
  heuristics.finalize("heuristics");
  int64_t count = 0;
  check(lib,
        lib.get_attribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                          nullptr),
        "heuristics' result count");
  std::vector<Descriptor> configs;
  std::vector<cudnnBackendDescriptor_t> handles;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(lib, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    handles.push_back(configs.back().get());
  }
  int64_t returned = 0;
  if (count > 0)
    check(lib,
          lib.get_attribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                            &returned, handles.data()),
          "heuristics' results");
  while (static_cast<int64_t>(configs.size()) > returned) configs.pop_back();
  plan.parts.push_back(std::move(heuristics));
  return configs;
}

// The first engine config (mode A's ranking, then the fallback list) whose execution plan finalizes.
void build_execution_plan(const CudnnLibrary& lib, cudnnHandle_t handle, Plan& plan) {
  std::string first_refusal;
  const Descriptor& graph = plan.parts.back();  // build_graph's last part
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    for (Descriptor& config : engine_configs(lib, graph, plan, mode)) {
      Descriptor execution(lib, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      try {
        execution.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle);
        execution.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
        execution.finalize("execution plan");
      } catch (const std::runtime_error& e) {
        if (first_refusal.empty()) first_refusal = e.what();
        continue;
      }
      int64_t returned = 0;
      check(lib,
            lib.get_attribute(execution.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &returned,
                              &plan.workspace),
            "workspace size");
      plan.parts.push_back(std::move(config));
      plan.plan.push_back(std::move(execution));
      return;
    }
  }
  throw std::runtime_error(first_refusal.empty() ? "cuDNN offers no engine for this SDPA graph" : first_refusal);
}

class CudnnSdpa final : public AttentionLibrary {
 public:
  CudnnSdpa(const CudnnLibrary& lib, cudaStream_t stream) : lib_(lib) {
    check(lib_, lib_.create(&handle_), "create handle");
    check(lib_, lib_.set_stream(handle_, stream), "set stream");
  }
  ~CudnnSdpa() override {
    plans_.clear();  // the descriptors before the handle they name
    if (handle_) lib_.destroy(handle_);
  }

  std::string name() const override { return "cudnn " + cudnn_version_text(lib_.version); }

  bool prepare(const SdpaShape& shape, std::string* why) override {
    if (plans_.count(shape)) return true;
    if (const auto refused = refused_.find(shape); refused != refused_.end()) return fail(refused->second, why);
    std::string problem = sdpa_shape_problem(shape);
    if (problem.empty()) {
      try {
        auto plan = std::make_unique<Plan>();
        build_graph(lib_, handle_, plan_sdpa(shape), *plan);
        build_execution_plan(lib_, handle_, *plan);
        if (plans_.size() >= kMostPlans) plans_.clear();  // a run uses a few shapes; a viewer may wander
        plans_[shape] = std::move(plan);
        return true;
      } catch (const std::exception& e) {
        problem = e.what();
      }
    }
    refused_[shape] = problem;
    return fail(problem, why);
  }
  bool prepared(const SdpaShape& shape) const override { return plans_.count(shape) > 0; }
  size_t workspace_bytes(const SdpaShape& shape) const override {
    const auto found = plans_.find(shape);
    return found == plans_.end() ? 0 : static_cast<size_t>(found->second->workspace);
  }

  bool run(const SdpaShape& shape, const void* q, const void* k, const void* v, void* out, float scale, void* workspace,
           std::string* why) override {
    const auto found = plans_.find(shape);
    if (found == plans_.end()) return fail("the shape was not prepared", why);
    try {
      Descriptor pack(lib_, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
      void* pointers[5] = {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), out, &scale};
      const int64_t uids[5] = {kSdpaQueryUid, kSdpaKeyUid, kSdpaValueUid, kSdpaOutputUid, kSdpaScaleUid};
      pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers, 5);
      pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids, 5);
      pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace);
      pack.finalize("variant pack");
      check(lib_, lib_.execute(handle_, found->second->plan.front().get(), pack.get()), "execute");
      return true;
    } catch (const std::exception& e) {
      return fail(e.what(), why);
    }
  }

 private:
  static bool fail(const std::string& reason, std::string* why) {
    if (why) *why = reason;
    return false;
  }
  static constexpr size_t kMostPlans = 32;
  const CudnnLibrary& lib_;
  cudnnHandle_t handle_ = nullptr;
  std::map<SdpaShape, std::unique_ptr<Plan>> plans_;
  std::map<SdpaShape, std::string> refused_;
};

}  // namespace

void check_sdpa_operation(const CudnnLibrary& lib, const SdpaGraphPlan& layout) {
  std::deque<Descriptor> parts;
  build_operation(lib, layout, parts);
}

std::unique_ptr<AttentionLibrary> open_cudnn_sdpa(void* stream) {
  return std::make_unique<CudnnSdpa>(cudnn(), static_cast<cudaStream_t>(stream));
}

}  // namespace lact::cuda
