// The ranks of one job agreeing on their command line and inputs (pipeline/run_agreement.h), the ranks as threads
// of this process exchanging text through a barrier (no MPI): every rank stops with the same line naming the
// lowest rank that differs from rank 0 and the field, a rank that fails while describing fails every rank, a
// rank at another exchange ends the others instead of leaving them waiting; and the digests of the fixture
// scene copied to another folder agree while a flipped byte in one image does not.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "datasets/scene.h"
#include "pipeline/run_agreement.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

namespace fs = std::filesystem;

// Ranks as threads: all_gather_text through one slot per rank and a reusable barrier.
class Exchange {
 public:
  explicit Exchange(int ranks) : slots_(ranks) {}
  std::vector<std::string> all_gather(int rank, const std::string& text) {
    barrier();  // every rank done reading the previous exchange
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slots_[rank] = text;
    }
    barrier();
    std::lock_guard<std::mutex> lock(mutex_);
    return slots_;
  }
  int size() const { return static_cast<int>(slots_.size()); }

 private:
  void barrier() {
    std::unique_lock<std::mutex> lock(mutex_);
    const int generation = generation_;
    if (++arrived_ == size()) {
      arrived_ = 0, ++generation_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return generation_ != generation; });
    }
  }
  std::vector<std::string> slots_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0, generation_ = 0;
};

class ThreadRanks final : public Ranks {
 public:
  ThreadRanks(Exchange& exchange, int rank) : exchange_(exchange), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return exchange_.size(); }
  int local_rank() const override { return rank_; }
  std::vector<std::string> all_gather_text(const std::string& text) override {
    return exchange_.all_gather(rank_, text);
  }
  std::string broadcast_text(const std::string& text) override { return all_gather_text(text)[0]; }

 private:
  Exchange& exchange_;
  int rank_;
};

// What one rank saw: no failure (""), or the RankFailure's line and whether this rank prints it.
struct Outcome {
  std::string line;
  bool printed = false;
};

// Runs step(rank, distribution) on `ranks` threads; every rank's outcome.
std::vector<Outcome> on_ranks(int ranks, const std::function<void(int, const Distribution&)>& step) {
  Exchange exchange(ranks);
  std::vector<Outcome> outcomes(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      ThreadRanks mine(exchange, r);
      Distribution d;
      d.ranks = &mine;
      try {
        step(r, d);
      } catch (const RankFailure& e) {
        outcomes[r] = {e.what(), e.print()};
      }
    });
  for (std::thread& t : threads) t.join();
  return outcomes;
}

RunDigest command_line(const std::string& inputs, const std::string& size = "64x64") {
  RunDigest digest;
  digest.add("the subcommand", "render");
  digest.add("--model", "given");
  digest.add("--inputs", inputs);
  digest.add("--size", size);
  return digest;
}

// Every rank ends with `line`, printed by rank 0 alone.
void expect_every_rank_stops(const std::vector<Outcome>& outcomes, const std::string& line) {
  for (size_t r = 0; r < outcomes.size(); ++r) {
    EXPECT_EQ(outcomes[r].line, line) << "rank " << r;
    EXPECT_EQ(outcomes[r].printed, r == 0) << "rank " << r;
  }
}

TEST(RunAgreement, TheSameDigestOnEveryRankAgrees) {
  int described = 0;
  std::mutex mutex;
  const auto outcomes = on_ranks(3, [&](int, const Distribution& d) {
    agree_on_run(d, [&](RunDigest& digest) {
      digest = command_line("0,1,2");
      std::lock_guard<std::mutex> lock(mutex);
      ++described;
    });
  });
  for (const Outcome& o : outcomes) EXPECT_EQ(o.line, "");
  EXPECT_EQ(described, 3);
}

TEST(RunAgreement, EveryRankNamesTheLowestRankThatDiffersAndTheField) {
  auto outcomes = on_ranks(4, [](int r, const Distribution& d) {
    agree_on_run(d, [&](RunDigest& digest) { digest = r == 2 ? command_line("0,1") : command_line("0,1,2"); });
  });
  expect_every_rank_stops(outcomes, "ranks disagree: rank 2 of 4 has --inputs '0,1' where rank 0 has '0,1,2'");
  // Ranks 1 and 3 differ in other fields: rank 1, the lowest, is named with its first differing field.
  outcomes = on_ranks(4, [](int r, const Distribution& d) {
    agree_on_run(d, [&](RunDigest& digest) {
      digest = r == 1 ? command_line("0,1,2", "32x32") : r == 3 ? command_line("7") : command_line("0,1,2");
    });
  });
  expect_every_rank_stops(outcomes, "ranks disagree: rank 1 of 4 has --size '32x32' where rank 0 has '64x64'");
}

TEST(RunAgreement, AFieldOnlyOneRankHasIsNamed) {
  const auto outcomes = on_ranks(2, [](int r, const Distribution& d) {
    agree_on_run(d, [&](RunDigest& digest) {
      digest = command_line("0,1,2");
      if (r == 1) digest.add("--path", "given");
    });
  });
  expect_every_rank_stops(outcomes, "ranks disagree: rank 1 of 2 has --path 'given' where rank 0 has nothing");
}

TEST(RunAgreement, ValuesThatDifferBeyondWhatIsShownAreStillTold) {
  const std::string start(100, 'a');
  const auto outcomes = on_ranks(2, [&](int r, const Distribution& d) {
    agree_on_run(d, [&](RunDigest& digest) { digest.add("--scene", start + (r == 0 ? "x" : "y")); });
  });
  ASSERT_EQ(outcomes[0].line.rfind("ranks disagree: rank 1 of 2 differs from rank 0 in --scene (both begin 'aaa", 0),
            0u)
      << outcomes[0].line;
}

TEST(RunAgreement, ARankThatFailsToDescribeFailsEveryRankWithItsLine) {
  const auto outcomes = on_ranks(3, [](int r, const Distribution& d) {
    agree_on_run(d, [&](RunDigest& digest) {
      if (r == 1) throw Error("/node1/model.safetensors", "cannot open file (No such file or directory)");
      digest = command_line("0,1,2");
    });
  });
  expect_every_rank_stops(outcomes,
                          "rank 1 of 3: /node1/model.safetensors: cannot open file (No such file or directory)");
}

TEST(RunAgreement, ARankAtAnotherExchangeEndsEveryRank) {
  // Rank 2 runs a command that is at Ranks::agree (a failure exchange) while the others agree on digests: every
  // rank returns (none waits for ever) and rank 0 prints why.
  const auto outcomes = on_ranks(3, [](int r, const Distribution& d) {
    if (r == 2) return d.ranks->agree([] {});
    agree_on_run(d, [&](RunDigest& digest) { digest = command_line("0,1,2"); });
  });
  EXPECT_EQ(outcomes[0].line,
            "rank 2 of 3: is not at the same point of the run (another subcommand, or another version of lact)");
  EXPECT_TRUE(outcomes[0].printed);
  EXPECT_EQ(outcomes[1].line, outcomes[0].line);
  EXPECT_NE(outcomes[2].line, "");
  EXPECT_FALSE(outcomes[2].printed);
}

TEST(RunAgreement, DigestsKeepAnyByteOfNamesAndValues) {
  RunDigest digest;
  const std::string odd("a:b\n12:\0c", 9);
  digest.add(odd, odd);
  digest.add("", "");
  digest.add_file("--model", "/no/such/file");
  const RunDigest back = RunDigest::decode(digest.encode());
  ASSERT_EQ(back.fields().size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.fields()[i].name, digest.fields()[i].name);
    EXPECT_EQ(back.fields()[i].hash, digest.fields()[i].hash);
    EXPECT_EQ(back.fields()[i].shown, digest.fields()[i].shown);
  }
  EXPECT_EQ(back.fields()[2].shown, "cannot be read");
  EXPECT_EQ(digest_difference(digest, back, 1, 2), "");
  EXPECT_THROW(RunDigest::decode("5:abc"), Error);
  EXPECT_THROW(RunDigest::decode("x:abc"), Error);
}

TEST(RunAgreement, OneProcessDescribesNothing) {
  bool described = false;
  agree_on_run(Distribution{}, [&](RunDigest&) { described = true; });
  EXPECT_FALSE(described);
  CommonOptions options;  // --distributed none
  EXPECT_FALSE(start_agreed_ranks(options, RunDigest()).active());
}

// The fixture scene's digest (cameras, views 0-2 as inputs, 3-4 as targets, their images' content).
RunDigest scene_digest(const std::string& cameras) {
  const std::vector<Scene> scenes = read_scenes(cameras);
  SceneSelection selection;
  selection.scene = scenes.at(0);
  selection.inputs = {0, 1, 2};
  selection.height = selection.width = 64;
  RunInputs inputs;
  inputs.selection = &selection;
  inputs.targets_spec = "3,4";
  RunDigest digest;
  describe_inputs(inputs, digest);
  return digest;
}

TEST(RunAgreement, TheSameSceneUnderAnotherPathAgreesAndAnotherImageDoesNot) {
  const fs::path fixture = fs::path(test::env_path("LACT_FIXTURE_DIR")) / "scene";
  const fs::path copy = fs::temp_directory_path() / ("lact_agreement_" + std::to_string(::getpid()));
  fs::remove_all(copy);
  fs::create_directories(copy / "elsewhere");
  fs::copy(fixture, copy / "elsewhere" / "scene", fs::copy_options::recursive);
  for (const auto& entry : fs::recursive_directory_iterator(copy))  // the fixture is read-only
    fs::permissions(entry.path(), fs::perms::owner_all, fs::perm_options::add);
  const RunDigest original = scene_digest((fixture / "opencv_cameras.json").string());
  const fs::path cameras = copy / "elsewhere" / "scene" / "opencv_cameras.json";
  EXPECT_EQ(digest_difference(original, scene_digest(cameras.string()), 1, 2), "");

  const std::vector<Scene> scenes = read_scenes(cameras.string());
  const std::string image = scenes.at(0).views.at(3).image_path;  // a target's image: one byte flipped
  std::fstream file(image, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(100);
  const char byte = static_cast<char>(file.get() ^ 0x01);
  file.seekp(100);
  file.put(byte);
  file.close();
  const std::string difference = digest_difference(original, scene_digest(cameras.string()), 1, 2);
  EXPECT_EQ(difference.rfind("ranks disagree: rank 1 of 2 has view 3's image (its content) '", 0), 0u) << difference;
  fs::remove_all(copy);
}

TEST(RunAgreement, AnImageOneRankCannotReadIsNamedByItsFile) {
  const fs::path fixture = fs::path(test::env_path("LACT_FIXTURE_DIR")) / "scene";
  const fs::path root = fs::temp_directory_path() / ("lact_agreement_unread_" + std::to_string(::getpid()));
  const fs::path copy = root / "scene";  // a scene is named after its folder
  fs::remove_all(root);
  fs::create_directories(root);
  fs::copy(fixture, copy, fs::copy_options::recursive);
  for (const auto& entry : fs::recursive_directory_iterator(copy))  // the fixture is read-only
    fs::permissions(entry.path(), fs::perms::owner_all, fs::perm_options::add);
  const std::vector<Scene> scenes = read_scenes((copy / "opencv_cameras.json").string());
  const std::string image = scenes.at(0).views.at(1).image_path;
  const std::string name = fs::path(image).filename().string();
  const RunDigest original = scene_digest((fixture / "opencv_cameras.json").string());
  fs::remove(image);
  const std::string difference =
      digest_difference(original, scene_digest((copy / "opencv_cameras.json").string()), 1, 2);
  EXPECT_EQ(difference.rfind("ranks disagree: rank 1 of 2 has view 1's image (its content) 'cannot be read (" + name +
                                 ")' where rank 0 has '",
                             0),
            0u)
      << difference;
  EXPECT_NE(difference.find(" (" + name + ")'", difference.find("rank 0 has")), std::string::npos) << difference;

  // Over an index only the images' sizes are compared: the first one missing is named.
  SceneList list;
  list.scenes.push_back(scenes.at(0));
  RunInputs inputs;
  inputs.scenes = &list;
  RunDigest listed;
  describe_inputs(inputs, listed);
  EXPECT_NE(listed.fields().back().shown.find(", " + name + " missing, hash "), std::string::npos)
      << listed.fields().back().shown;
  fs::remove_all(root);
}

TEST(RunAgreement, AnIndexCopiedElsewhereAgreesWithItsBrokenScene) {
  // The same index on two nodes: one scene read, one failed, under other folders.
  auto digest = [](const std::string& root, const std::string& broken = "broken") {
    SceneList list;
    list.scenes.push_back(Scene{});
    list.scenes[0].name = "good";
    const std::string entry = root + "/" + broken + "/opencv_cameras.json";
    list.failed.push_back({entry, entry + ": corrupt JSON"});
    RunInputs inputs;
    inputs.scenes = &list;
    RunDigest d;
    describe_inputs(inputs, d);
    return d;
  };
  EXPECT_EQ(digest_difference(digest("/node0/data"), digest("/mnt/other/data"), 1, 2), "");
  const std::string difference = digest_difference(digest("/node0/data"), digest("/node0/data", "other"), 1, 2);
  EXPECT_EQ(difference.rfind("ranks disagree: rank 1 of 2 has the scenes of --data that fail to read", 0), 0u)
      << difference;
}

}  // namespace
}  // namespace lact
