// Wall time by op for the CPU backend (lact bench --profile): the CPU runs each op to completion before the
// next, so a clock around the op is its time. Products are keyed by shape ("gemm 512x2304x768") with their
// FLOPs, so a profile shows which of the model's product shapes run below the GEMM rate.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace lact {

class OpProfiler {
 public:
  void start();
  // The ops since start(), most time first; stops.
  std::vector<OpProfile> stop();
  bool active() const { return active_.load(std::memory_order_relaxed); }
  void add(const std::string& op, double seconds, double flops);

 private:
  std::atomic<bool> active_{false};
  std::mutex mutex_;
  std::map<std::string, OpProfile> by_op_;
};

// Times one op while `profiler` is active (one relaxed load otherwise). `flops` counts a product's work.
class OpTimer {
 public:
  OpTimer(OpProfiler& profiler, const char* op, double flops = 0) : profiler_(profiler), op_(op), flops_(flops) {
    if (profiler_.active()) start_ = std::chrono::steady_clock::now(), timing_ = true;
  }
  // A product: keyed by its shape, m x n x k (times batch when batched).
  OpTimer(OpProfiler& profiler, int64_t m, int64_t n, int64_t k, int64_t batch);
  ~OpTimer();
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  OpProfiler& profiler_;
  std::string op_;
  double flops_ = 0;
  bool timing_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace lact
