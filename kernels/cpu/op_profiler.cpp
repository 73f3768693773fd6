#include "kernels/cpu/op_profiler.h"

#include <algorithm>

namespace lact {

void OpProfiler::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  by_op_.clear();
  active_.store(true);
}

std::vector<OpProfile> OpProfiler::stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  active_.store(false);
  std::vector<OpProfile> result;
  for (auto& entry : by_op_) result.push_back(entry.second);
  by_op_.clear();
  std::sort(result.begin(), result.end(),
            [](const OpProfile& a, const OpProfile& b) { return a.milliseconds > b.milliseconds; });
  return result;
}

void OpProfiler::add(const std::string& op, double seconds, double flops) {
  std::lock_guard<std::mutex> lock(mutex_);
  OpProfile& p = by_op_[op];
  p.op = op;
  ++p.calls;
  p.milliseconds += seconds * 1e3;
  p.gflop += flops / 1e9;
}

OpTimer::OpTimer(OpProfiler& profiler, int64_t m, int64_t n, int64_t k, int64_t batch) : profiler_(profiler) {
  if (!profiler_.active()) return;
  op_ = "gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  if (batch > 1) op_ += " x" + std::to_string(batch);
  flops_ = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
  timing_ = true;
  start_ = std::chrono::steady_clock::now();
}

OpTimer::~OpTimer() {
  if (!timing_) return;
  profiler_.add(op_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(), flops_);
}

}  // namespace lact
