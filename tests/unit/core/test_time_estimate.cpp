// The time estimate (pipeline/time_estimate.h): the rates it keeps, what it times and its arithmetic from hand-set
// rates; and the default thread count beside other running threads (system/thread_limit.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/rate_cache.h"
#include "pipeline/shape_timing.h"
#include "pipeline/time_estimate.h"
#include "system/thread_limit.h"
#include "tests/common/hook_log_backend.h"
#include "tests/common/small_models.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

using test::small_config;

// A fresh folder under the system's temporary one, removed with its contents.
struct TempFolder {
  std::string path;
  TempFolder() {
    std::string name = (std::filesystem::temp_directory_path() / "lact_rates_XXXXXX").string();
    path = ::mkdtemp(name.data()) ? name : "";
  }
  ~TempFolder() { std::filesystem::remove_all(path); }
};

// ---- The rates the estimate keeps (pipeline/rate_cache.h).

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(RateCache, KeepsValuesForTheNextProcess) {
  TempFolder tmp;
  const std::string path = tmp.path + "/lact/rates.txt";  // the folder is made on the first write
  RateCache(path).keep({{"machine | 64x64x64x1t", 12.5}, {"machine | 8x8x8x1n", 3.25}});
  RateCache again(path);
  EXPECT_EQ(again.find("machine | 64x64x64x1t"), 12.5);
  EXPECT_EQ(again.find("machine | 8x8x8x1n"), 3.25);
  EXPECT_EQ(again.find("another machine | 64x64x64x1t"), 0.0);
  // A second process's entries are merged, not lost.
  RateCache(path).keep({{"another machine | 64x64x64x1t", 7}});
  EXPECT_EQ(RateCache(path).find("machine | 8x8x8x1n"), 3.25);
  EXPECT_EQ(RateCache(path).find("another machine | 64x64x64x1t"), 7.0);
}

TEST(RateCache, ACorruptFileIsIgnoredAndRewritten) {
  TempFolder tmp;
  const std::string path = tmp.path + "/rates.txt";
  for (const std::string& corrupt :
       {std::string("\x00\xff garbage\n", 11), std::string("lact rates 9\n5\tk\n"), std::string("")}) {
    std::ofstream(path, std::ios::binary) << corrupt;
    RateCache cache(path);
    EXPECT_EQ(cache.find("k"), 0.0);
    cache.keep({{"k", 2}});
    EXPECT_EQ(RateCache(path).find("k"), 2.0);
    EXPECT_EQ(file_text(path), "lact rates 1\n2\tk\n");
  }
  // Malformed lines (no tab, a number that is not one, zero, NaN, a control character) are skipped, the rest kept.
  std::ofstream(path) << "lact rates 1\nno tab\nx1\tbad\n0\tzero\nnan\tnan\n3\tgood\n4\tctl\x01key\n-1\tneg\n";
  EXPECT_EQ(RateCache::parse(file_text(path)), (std::map<std::string, double>{{"good", 3}}));
  // A folder where the file should be: not a cache, and no error.
  std::filesystem::remove(path);
  std::filesystem::create_directory(path);
  RateCache folder(path);
  EXPECT_EQ(folder.find("good"), 0.0);
  EXPECT_NO_THROW(folder.keep({{"good", 5}}));
  EXPECT_EQ(folder.find("good"), 5.0);  // kept for this process
}

TEST(RateCache, AFileThatCannotBeWrittenIsNotKept) {
  TempFolder tmp;
  std::ofstream(tmp.path + "/file") << "a regular file, not a folder";
  RateCache cache(tmp.path + "/file/lact/rates.txt");
  EXPECT_NO_THROW(cache.keep({{"k", 2}}));
  EXPECT_EQ(cache.find("k"), 2.0);
  EXPECT_FALSE(std::filesystem::exists(tmp.path + "/file/lact"));
  RateCache none("");
  EXPECT_NO_THROW(none.keep({{"k", 2}}));
}

TEST(RateCache, DefaultPathFollowsXdgCacheHome) {
  const char* saved_xdg = std::getenv("XDG_CACHE_HOME");
  const char* saved_home = std::getenv("HOME");
  const std::string xdg = saved_xdg ? saved_xdg : "", home = saved_home ? saved_home : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  ::setenv("HOME", "/h", 1);
  EXPECT_EQ(RateCache::default_path(), "/x/cache/lact/rates.txt");
  ::setenv("XDG_CACHE_HOME", "relative", 1);  // not absolute: ignored, as the specification says
  EXPECT_EQ(RateCache::default_path(), "/h/.cache/lact/rates.txt");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(RateCache::default_path(), "/h/.cache/lact/rates.txt");
  ::unsetenv("HOME");
  EXPECT_EQ(RateCache::default_path(), "");
  saved_xdg ? ::setenv("XDG_CACHE_HOME", xdg.c_str(), 1) : ::unsetenv("XDG_CACHE_HOME");
  saved_home ? ::setenv("HOME", home.c_str(), 1) : ::unsetenv("HOME");
}

// ---- The estimate (pipeline/time_estimate.h).

// No work before the work: estimating times the model's products (and attention) only, never the model, and
// only the first time.
TEST(TimeEstimate, TimesProductsOnlyAndOnlyOnce) {
  TempFolder tmp;
  test::HookLogBackend be;
  const ModelConfig config = small_config(false, 2);
  WorkSize work;
  work.encode_views = work.state_views = 4;
  work.height = work.width = 32;
  work.renders = {{32, 32, 3}};
  RateCache cache(tmp.path + "/rates.txt");
  const TimeEstimate first = estimate_time(be, config, work, cache);
  EXPECT_GT(first.measured, 0);
  EXPECT_GT(first.seconds, 0);
  EXPECT_EQ(first.flops, work_flops(config, work));
  for (const std::string& hook : be.log)  // the shapes' products and the fused attention op, nothing else
    EXPECT_TRUE(hook == "empty" || hook == "upload" || hook == "gemm" || hook == "attention") << hook;
  be.log.clear();
  RateCache reread(tmp.path + "/rates.txt");  // as the next process reads it
  const TimeEstimate second = estimate_time(be, config, work, reread);
  for (const std::string& hook : be.log)
    EXPECT_TRUE(hook == "empty" || hook == "upload" || hook == "gemm" || hook == "attention") << hook;
  // On a busy machine the rates are timed again at each run (the best reading kept) until a quiet one.
  if (!machine_busy()) {
    EXPECT_EQ(second.measured, 0);
    EXPECT_TRUE(be.log.empty());
    EXPECT_NEAR(second.seconds, first.seconds, 1e-4 * first.seconds);  // the file keeps 6 digits
  }
}

// Window attention (4 heads of 16) and an MLP (hidden 256) at width 64, patches of 8, two layers: every FLOP
// of it is written out below.
ModelConfig attention_and_mlp_config() {
  const nlohmann::json json = {
      {"patch_size", 8},
      {"dim", 64},
      {"layers", 2},
      {"block_config",
       {{{"type", "model.SelfAttention"}, {"length_dim", "l"}, {"params", {{"head_dim", 16}, {"use_qk_norm", true}}}},
        {{"type", "model.MLP"}, {"length_dim", "vl"}, {"params", {{"inter_multi", 4}}}}}}};
  return parse_model_config(json, "test config");
}

// Encoding 2 views of 32x32 (16 tokens each, 32 in all), then rendering 2 views of 32x32 from them.
WorkSize two_views_in_two_out() {
  WorkSize work;
  work.encode_views = work.state_views = 2;
  work.height = work.width = 32;
  work.renders = {{32, 32, 2}};
  return work;
}

// Hand-set rates (GFLOP/s) for every product shape of that work, as a quiet machine would have kept them: the
// keys are the shapes as "m x n x k x batch", then t (b transposed) or a (the attention op, timed fused).
void keep_hand_set_rates(Backend& be, RateCache& cache) {
  const std::string machine = rate_cache_machine(be) + " | ";
  std::map<std::string, double> rates;
  for (const std::string tokens : {"32", "16"}) {  // the encode's 32 tokens, a rendered view's 16
    rates[machine + tokens + "x192x64x1t"] = 2;    // attention qkv
    rates[machine + tokens + "x64x64x1t"] = 4;     // attention out
    rates[machine + tokens + "x256x64x1t"] = 8;    // MLP up
    rates[machine + tokens + "x64x256x1t"] = 1;    // MLP down
  }
  rates[machine + "16x16x16x8a"] = 0.5;  // attention per view: 4 heads x 2 views of the encode
  rates[machine + "16x16x16x4a"] = 0.5;  // 4 heads x 1 view rendered
  cache.keep(rates);
}

// The estimate's arithmetic from hand-set rates: nothing timed, and the seconds as the header states them (the
// products' seconds x (1 + 85 / dim) + attention's), each term written out here.
TEST(TimeEstimate, ReadsHandSetRatesAsTheHeaderStates) {
  TempFolder tmp;
  test::HookLogBackend be;
  RateCache cache(tmp.path + "/rates.txt");
  keep_hand_set_rates(be, cache);
  RateCache reread(tmp.path + "/rates.txt");
  const TimeEstimate estimate =
      estimate_time(be, attention_and_mlp_config(), two_views_in_two_out(), reread, CpuShare{});
  EXPECT_EQ(estimate.measured, 0);
  EXPECT_TRUE(be.log.empty());  // no product ran
  // Encode, per layer (32 tokens, windows of 16): qkv 2*32*192*64 at 2 GFLOP/s, out 2*32*64*64 at 4, up and
  // down 2*32*256*64 at 8 and 1; attention 4*32*16*64 at 0.5.
  const double encode_products = 2 * (786432 / 2e9 + 262144 / 4e9 + 1048576 / 8e9 + 1048576 / 1e9);
  const double encode_attention = 2 * (131072 / 0.5e9);
  // Render, per layer and view (16 tokens): half the encode's products, attention 4*16*16*64.
  const double render_products = 2 * 2 * (393216 / 2e9 + 131072 / 4e9 + 524288 / 8e9 + 524288 / 1e9);
  const double render_attention = 2 * 2 * (65536 / 0.5e9);
  // The products no kind lists: the embedding (2 * 768 * 64 a token) of 32 encoded tokens and of 2 x 16 rendered,
  // the head (2 * 64 * 192) of those 32, at the listed products' mean rate: 12582912 FLOPs in 6.5536 ms.
  const double unlisted = (32 * 98304.0 + 32 * (98304.0 + 24576.0)) / (12582912 / 6.5536e-3);
  const double products = encode_products + render_products + unlisted;
  const double expected = products * (1 + 85.0 / 64) + encode_attention + render_attention;
  EXPECT_NEAR(estimate.seconds, expected, 1e-9 * expected);
  EXPECT_NEAR(estimate.attention_seconds, encode_attention + render_attention, 1e-12);
  // The FLOPs: the encode's embedding and 2 layers of (2*32*64*256 + 4*32*16*64) + 2*2*32*64*256, the render's
  // embedding and head for 2 x 16 tokens and 2 x 2 layers of (2*16*64*256 + 4*16*16*64) + 2*2*16*64*256.
  const double flops = 3145728 + 2 * (1179648 + 2097152.0) + 3932160 + 4 * (589824 + 1048576.0);
  EXPECT_EQ(estimate.flops, flops);
  EXPECT_NEAR(estimate.gflops, flops / expected / 1e9, 1e-9 * estimate.gflops);
  EXPECT_EQ(estimate.slowdown, 1);
  EXPECT_EQ(estimate_basis(estimate), "0 GFLOP at about 0.81 GFLOP/s measured here");
}

// The estimate beside other running work: the quiet rates scaled by the share of the CPUs the run's threads get
// (a hand-set load, nothing read from this machine), and the line saying so.
TEST(TimeEstimate, ScalesTheQuietRatesByTheCpusOthersTake) {
  TempFolder tmp;
  test::HookLogBackend be;
  RateCache cache(tmp.path + "/rates.txt");
  keep_hand_set_rates(be, cache);
  const ModelConfig config = attention_and_mlp_config();
  const WorkSize work = two_views_in_two_out();
  const TimeEstimate quiet = estimate_time(be, config, work, cache, CpuShare{1, 2, MachineLoad{}});
  EXPECT_EQ(quiet.slowdown, 1);
  EXPECT_EQ(estimate_basis(quiet), "0 GFLOP at about 0.81 GFLOP/s measured here");
  struct Case {
    int threads, usable, online, others;
    double slowdown;  // by hand: (threads + others on the usable CPUs) / usable CPUs, at least 1
  } cases[] = {
      {1, 2, 2, 3, 2.0},   // the run's 1 thread and 3 others share 2 CPUs: half a CPU each
      {1, 2, 2, 2, 1.5},   // two busy loops beside the default 1 thread: 2 CPUs for 3 threads
      {1, 2, 2, 1, 1.0},   // one other thread: each has a CPU
      {2, 2, 2, 2, 2.0},   // --threads 2 beside two busy loops
      {4, 4, 16, 8, 1.5},  // 4 of 16 CPUs: a quarter of the 8 others land on them, 6 threads on 4
      {0, 2, 2, 40, 1.0},  // not a CPU backend: the load leaves its time
  };
  for (const Case& c : cases) {
    MachineLoad load;
    load.cpus = c.online, load.others_running = c.others, load.average = c.others;
    const TimeEstimate busy = estimate_time(be, config, work, cache, CpuShare{c.threads, c.usable, load});
    EXPECT_EQ(busy.slowdown, c.slowdown) << c.threads << " " << c.others;
    EXPECT_NEAR(busy.seconds, quiet.seconds * c.slowdown, 1e-12) << c.threads << " " << c.others;
    EXPECT_NEAR(busy.attention_seconds, quiet.attention_seconds * c.slowdown, 1e-12);
    EXPECT_EQ(busy.gflops, quiet.gflops);  // the rate measured here, before the load
  }
  MachineLoad load;
  load.cpus = 2, load.others_running = 3;
  EXPECT_EQ(estimate_basis(estimate_time(be, config, work, cache, CpuShare{1, 2, load})),
            "0 GFLOP at about 0.81 GFLOP/s measured here, 2x as long beside 3 other running threads on 2 CPUs");
  load.others_running = 1;
  EXPECT_EQ(estimate_basis(estimate_time(be, config, work, cache, CpuShare{1, 2, load})),
            "0 GFLOP at about 0.81 GFLOP/s measured here, beside 1 other running thread on 2 CPUs");
  EXPECT_EQ(load_slowdown(CpuShare{1, 2, load}), 1);
}

// A clock of hand-set readings: each run's wall-clock seconds and its wait for a CPU, in turn.
class HandSetClock : public RunClock {
 public:
  explicit HandSetClock(std::vector<TimedRun> runs) : runs_(std::move(runs)) {}
  void start() override {}
  TimedRun stop() override { return runs_.at(used++); }
  size_t used = 0;

 private:
  std::vector<TimedRun> runs_;
};

// A shape timed beside other work: each run's wait for a CPU is left out, so its rate is a quiet machine's and
// the estimate's load_slowdown counts the load once (a rate read off the wall clock carried it twice).
TEST(TimeEstimate, TimesAShapeWithoutItsWaitsForACpu) {
  test::HookLogBackend be;
  const GemmShape up{"mlp up", 64, 256, 64, 1, true};  // 2 * 64 * 256 * 64 = 2097152 FLOPs
  // The first run sets the shape up and is not read; then at least 3: 10 ms of which 6 waiting is 4 ms on a quiet
  // machine, 5 ms of which 0.5 waiting 4.5 ms, 6 ms unhindered; the least read.
  HandSetClock preempted({{1.0, 0}, {0.010, 0.006}, {0.005, 0.0005}, {0.006, 0}, {0.001, 0}});
  EXPECT_NEAR(time_shape(be, up, preempted), 2097152 / 0.004 / 1e9, 1e-9);
  EXPECT_EQ(preempted.used, 4u);
  // Short runs are repeated until 4 ms of wall-clock time are spent: quiet 0.5, 1, 0.3, 0.4 and 0.6 ms in 1, 1,
  // 1.2, 0.4 and 0.6 ms, the least read.
  HandSetClock short_runs({{1.0, 0}, {0.001, 0.0005}, {0.001, 0}, {0.0012, 0.0009}, {0.0004, 0}, {0.0006, 0}, {1, 0}});
  EXPECT_NEAR(time_shape(be, up, short_runs), 2097152 / 0.0003 / 1e9, 1e-6);
  EXPECT_EQ(short_runs.used, 6u);
  // The attention op counts as two products: 4 * 16 * 16 * 16 * 8 = 131072 FLOPs in 8 - 4 ms.
  const GemmShape attention{"attention scores (window)", 16, 16, 16, 8, true};
  HandSetClock once({{1.0, 0}, {0.008, 0.004}, {0.009, 0.001}, {0.0085, 0}});
  EXPECT_NEAR(time_shape(be, attention, once), 131072 / 0.004 / 1e9, 1e-9);
  EXPECT_EQ(quiet_seconds({0.010, 0.004}), 0.010 - 0.004);
  EXPECT_EQ(quiet_seconds({0.010, 0.020}), 0);  // never below nothing
}

// The system clock's waits fall within the run they are read for, and a GPU's clock counts none.
TEST(TimeEstimate, SystemClockWaitsFallWithinTheRun) {
  for (const bool count_waits : {true, false}) {
    SystemRunClock clock(count_waits);
    clock.start();
    volatile double sum = 0;
    for (int i = 0; i < 2000000; ++i) sum = sum + i * 0.5;
    const TimedRun run = clock.stop();
    EXPECT_GT(run.seconds, 0);
    EXPECT_GE(run.waited, 0);
    EXPECT_LE(run.waited, run.seconds);
    if (!count_waits) {
      EXPECT_EQ(run.waited, 0);
    }
  }
}

TEST(DefaultThreads, LeaveOtherRunningThreadsTheirCpus) {
  MachineLoad load;
  load.cpus = 2;
  EXPECT_EQ(threads_beside(2, load), 2);  // idle
  load.others_running = 1;
  EXPECT_EQ(threads_beside(2, load), 1);
  load.others_running = 2;  // two CPU-bound jobs on two cores
  EXPECT_EQ(threads_beside(2, load), 1);
  load.others_running = 40;
  EXPECT_EQ(threads_beside(2, load), 1);
  load.cpus = 16, load.others_running = 4;
  EXPECT_EQ(threads_beside(16, load), 12);
  EXPECT_EQ(threads_beside(4, load), 3);  // 4 of the 16 CPUs: a quarter of the others' threads land on them
}

// A count asked through OMP_NUM_THREADS is kept whatever the load, so one command gives the same bits each time.
TEST(DefaultThreads, AnAskedOmpNumThreadsIsKept) {
  const char* before = std::getenv("OMP_NUM_THREADS");
  const std::string saved = before ? before : "";
  ::setenv("OMP_NUM_THREADS", "1", 1);
  EXPECT_EQ(default_threads(), 1);
  ::setenv("OMP_NUM_THREADS", "100000", 1);
  EXPECT_EQ(default_threads(), usable_cpus());
  ::setenv("OMP_NUM_THREADS", "1,4", 1);
  EXPECT_EQ(default_threads(), 1);
  if (before)
    ::setenv("OMP_NUM_THREADS", saved.c_str(), 1);
  else
    ::unsetenv("OMP_NUM_THREADS");
}

}  // namespace
}  // namespace lact
