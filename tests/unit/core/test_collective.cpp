// Encoding across ranks without MPI: ranks as threads of this process, each with its own CPU backend and model,
// exchanging through an in-process Collective (sums in rank order). The state every rank returns must be the
// same on every rank, bit for bit, and equal the single-process state (summation order aside) for every module
// kind and both Newton-Schulz routes. Also rank_share and gather_token_rows against values worked out by hand.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/collective.h"
#include "core/model.h"
#include "core/random_weights.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "tests/common/small_models.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

// What the ranks share: one slot per rank and a reusable barrier.
struct Exchange {
  explicit Exchange(int ranks) : slots(ranks) {}
  void barrier() {
    std::unique_lock<std::mutex> lock(mutex);
    const int generation = generation_;
    if (++arrived_ == static_cast<int>(slots.size())) {
      arrived_ = 0;
      ++generation_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return generation_ != generation; });
    }
  }
  std::vector<std::vector<float>> slots;
  std::mutex mutex;

 private:
  std::condition_variable changed_;
  int arrived_ = 0, generation_ = 0;
};

class ThreadCollective final : public Collective {
 public:
  ThreadCollective(Exchange& exchange, int rank) : exchange_(exchange), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(exchange_.slots.size()); }
  void all_reduce_sum(Backend& be, Tensor& t) override {
    const std::vector<std::vector<float>> all = share(be.to_host(t));
    std::vector<float> sum(all[0].size(), 0.0f);
    for (const auto& part : all)  // rank order on every rank: the same bits everywhere
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
    be.upload(t, sum.data());
    bytes_ += t.numel() * 4;
  }
  Tensor all_gather(Backend& be, const Tensor& local) override {
    std::vector<float> flat;
    for (const auto& part : share(be.to_host(local))) flat.insert(flat.end(), part.begin(), part.end());
    bytes_ += local.numel() * 4;
    return be.from_host({static_cast<int64_t>(flat.size())}, flat.data());
  }
  std::vector<int64_t> all_gather_counts(int64_t count) override {
    std::vector<int64_t> counts;
    for (const auto& part : share({static_cast<float>(count)})) counts.push_back(static_cast<int64_t>(part[0]));
    return counts;
  }

 private:
  std::vector<std::vector<float>> share(std::vector<float> mine) {
    exchange_.barrier();  // every rank done reading the previous exchange
    {
      std::lock_guard<std::mutex> lock(exchange_.mutex);
      exchange_.slots[rank_] = std::move(mine);
    }
    exchange_.barrier();
    std::lock_guard<std::mutex> lock(exchange_.mutex);
    return exchange_.slots;
  }
  Exchange& exchange_;
  int rank_;
};

TEST(RankShare, ConsecutiveSharesDifferingByAtMostOne) {
  EXPECT_EQ(rank_share(10, 3, 0), (std::pair<int64_t, int64_t>{0, 4}));
  EXPECT_EQ(rank_share(10, 3, 1), (std::pair<int64_t, int64_t>{4, 7}));
  EXPECT_EQ(rank_share(10, 3, 2), (std::pair<int64_t, int64_t>{7, 10}));
  EXPECT_EQ(rank_share(4, 3, 0), (std::pair<int64_t, int64_t>{0, 2}));
  EXPECT_EQ(rank_share(4, 3, 2), (std::pair<int64_t, int64_t>{3, 4}));
  EXPECT_EQ(rank_share(5, 1, 0), (std::pair<int64_t, int64_t>{0, 5}));
  EXPECT_THROW(rank_share(5, 2, 2), Error);
}

// Runs f(rank, collective) on `ranks` threads.
template <typename F>
void on_threads(int ranks, F f) {
  Exchange exchange(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ThreadCollective collective(exchange, r);
      f(r, collective);
    });
  for (std::thread& t : threads) t.join();
}

TEST(GatherTokenRows, EveryRanksRowsPerBatchEntryInRankOrder) {
  constexpr int kRanks = 3, kBatch = 2, kCols = 3;
  const int rows[kRanks] = {2, 1, 3};  // 6 rows in all
  auto value = [](int rank, int b, int row, int col) { return float(1000 * rank + 100 * b + 10 * row + col); };
  std::vector<std::vector<float>> gathered(kRanks);
  on_threads(kRanks, [&](int r, Collective& c) {
    auto be = make_cpu_backend(1);
    std::vector<float> mine;
    for (int b = 0; b < kBatch; ++b)
      for (int i = 0; i < rows[r]; ++i)
        for (int j = 0; j < kCols; ++j) mine.push_back(value(r, b, i, j));
    const Tensor all = gather_token_rows(*be, &c, be->from_host({kBatch, rows[r], kCols}, mine.data()));
    EXPECT_EQ(all.shape(), (Shape{kBatch, 6, kCols}));
    gathered[r] = be->to_host(all);
  });
  std::vector<float> expected;  // batch-major, then rank 0's rows, rank 1's, rank 2's
  for (int b = 0; b < kBatch; ++b)
    for (int r = 0; r < kRanks; ++r)
      for (int i = 0; i < rows[r]; ++i)
        for (int j = 0; j < kCols; ++j) expected.push_back(value(r, b, i, j));
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(gathered[r], expected) << "rank " << r;
}

std::vector<std::vector<float>> state_values(Backend& be, const SceneState& s);

struct Case {
  const char* name;
  ModelConfig config;
  NewtonSchulzRoute route;
};

// Newton-Schulz on the dense route amplifies a change of summation order in its input (the summed directions)
// about a hundredfold: there the bound is the engine's own floor (one process with another token tile moves the
// state by as much), elsewhere 1e-5.
double state_bound(const Case& c) {
  const bool dense_newton_schulz = c.route == NewtonSchulzRoute::Dense && c.config.ttt_variant().muon;
  return dense_newton_schulz ? 5e-5 : 1e-5;
}

// Max |state with token tile `tile` - state with the default tile|: the single-process floor.
double tile_floor(const Case& c, const std::vector<PosedImage>& views, const std::vector<std::vector<float>>& expected,
                  int64_t tile) {
  auto be = make_cpu_backend(1);
  ModelOptions options;
  options.newton_schulz = c.route;
  options.token_tile = tile;
  const Model model(random_model_weights(c.config, *be, 9), *be, options);
  const std::vector<std::vector<float>> tiled = state_values(*be, model.encode(views));
  double worst = 0;
  for (size_t t = 0; t < tiled.size(); ++t) worst = std::max(worst, test::max_abs_error(tiled[t], expected[t]));
  return worst;
}

std::vector<Case> cases() {
  const ModelConfig ttt = test::small_config(false, 2);
  return {
      {"baseline, dense route", ttt, NewtonSchulzRoute::Dense},
      {"baseline, low-rank route (factors gathered)", ttt, NewtonSchulzRoute::LowRank},
      {"full attention (KV cache gathered)", test::small_config(true, 2), NewtonSchulzRoute::Auto},
      {"V2 (W1 only)", with_ttt_variant(ttt, "v2", "test"), NewtonSchulzRoute::Dense},
      {"V2, low-rank route", with_ttt_variant(ttt, "v2", "test"), NewtonSchulzRoute::LowRank},
      {"V6 (linear attention)", with_ttt_variant(test::small_config(false, 1), "v6", "test"), NewtonSchulzRoute::Auto}};
}

std::vector<std::vector<float>> state_values(Backend& be, const SceneState& s) {
  std::vector<std::vector<float>> out;
  for (const ModuleState& m : s.modules)
    for (const auto& named : m.tensors) out.push_back(be.to_host(named.second));
  return out;
}

TEST(EncodeAcrossRanks, EveryRankHoldsTheSingleProcessState) {
  const auto views = test::random_views(5, 16, 24, 31);
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    ModelOptions options;
    options.newton_schulz = c.route;
    auto be = make_cpu_backend(1);
    const Model alone(random_model_weights(c.config, *be, 9), *be, options);
    const std::vector<std::vector<float>> expected = state_values(*be, alone.encode(views));
    for (int ranks : {2, 3}) {
      std::vector<std::vector<std::vector<float>>> states(ranks);
      std::vector<int> input_views(ranks);
      on_threads(ranks, [&](int r, Collective& collective) {
        auto mine_be = make_cpu_backend(1);
        const Model model(random_model_weights(c.config, *mine_be, 9), *mine_be, options);
        const auto [begin, end] = rank_share(static_cast<int64_t>(views.size()), ranks, r);
        const SceneState state =
            model.encode(std::vector<PosedImage>(views.begin() + begin, views.begin() + end), {}, &collective);
        states[r] = state_values(*mine_be, state);
        input_views[r] = state.input_views;
      });
      double worst = 0;
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(input_views[r], 5);
        EXPECT_EQ(states[r], states[0]) << "rank " << r << " of " << ranks << " differs from rank 0";
      }
      ASSERT_EQ(states[0].size(), expected.size());
      double largest = 0;
      for (size_t t = 0; t < expected.size(); ++t) {
        worst = std::max(worst, test::max_abs_error(states[0][t], expected[t]));
        for (float v : expected[t]) largest = std::max(largest, double(std::fabs(v)));
      }
      std::printf("%-45s %d ranks: state max |diff| %.2e (largest |value| %.2f; one process, token tile 12: %.2e)\n",
                  c.name, ranks, worst, largest, tile_floor(c, views, expected, 12));
      EXPECT_LE(worst, state_bound(c));
    }
  }
}

}  // namespace
}  // namespace lact
