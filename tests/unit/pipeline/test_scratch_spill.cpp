// The residual stream spilled to a scratch file (lact --scratch; core/residual_store.h, pipeline/scratch_file.h):
// the encode reads and writes the same floats it would keep in memory, so the state is the streamed encode's bit
// for bit; the file has no name in its directory from the start and its space is reserved before the encode; a
// directory in memory, missing or too small is one error naming --scratch. The estimate of a spilled encode holds
// only a chunk of the stream and covers the backend's measured peak.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/memory_estimate.h"
#include "core/model.h"
#include "core/random_weights.h"
#include "kernels/backend_factory.h"
#include "pipeline/scratch_file.h"
#include "system/error.h"
#include "tests/common/small_models.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

using test::random_views;
using test::small_config;

// A fresh directory on disk (not tmpfs where possible: the build tree), removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    std::string pattern = std::string(LACT_TEST_SCRATCH_PARENT) + "/scratch-test-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    path = mkdtemp(name.data()) ? name.data() : "";
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  int entries() const {
    std::string listing;
    FILE* pipe = popen(("ls -A '" + path + "' | wc -l").c_str(), "r");
    char line[64] = "";
    if (pipe && std::fgets(line, sizeof line, pipe)) listing = line;
    if (pipe) pclose(pipe);
    return std::atoi(listing.c_str());
  }
};

std::vector<float> state_values(Backend& be, const SceneState& state) {
  std::vector<float> all;
  for (const ModuleState& m : state.modules)
    for (const auto& [name, tensor] : m.tensors) {
      const std::vector<float> values = be.to_host(tensor);
      all.insert(all.end(), values.begin(), values.end());
    }
  return all;
}

TEST(ScratchSpill, SameStateAsTheStreamedEncodeInMemory) {
  auto be = make_cpu_backend(2);
  ModelOptions options;
  options.token_tile = 48;
  options.newton_schulz = NewtonSchulzRoute::Dense;
  const Model model(random_model_weights(small_config(false, 2), *be, 5), *be, options);
  const int views = 5, height = 32, width = 48;  // 24 tokens a view
  const auto inputs = random_views(views, height, width);
  const int64_t chunk = model.encode_chunk(views, views, height, width, 2);
  ASSERT_LT(chunk, views);
  const std::vector<float> in_memory = state_values(*be, model.encode(inputs, {}, nullptr, chunk));

  TempDir dir;
  ASSERT_FALSE(dir.path.empty());
  const int64_t stream_bytes = int64_t(views) * 24 * model.config().dim * 4;
  ScratchFile scratch(dir.path, stream_bytes);
  EXPECT_EQ(dir.entries(), 0);  // no name from the start: nothing to leave behind
  be->reset_peak_memory();
  const int64_t before = be->allocated_memory();
  const std::vector<float> spilled = state_values(*be, model.encode(inputs, {}, nullptr, chunk, &scratch));
  const int64_t peak = be->peak_memory() - before;
  ASSERT_EQ(spilled.size(), in_memory.size());
  size_t different = 0;
  for (size_t i = 0; i < spilled.size(); ++i) different += std::memcmp(&spilled[i], &in_memory[i], 4) != 0;
  EXPECT_EQ(different, 0u) << "of " << spilled.size();

  const EncodeMemory spill_estimate =
      estimate_encode_memory(model.config(), options, views, height, width, -1, chunk, true);
  const EncodeMemory memory_estimate = estimate_encode_memory(model.config(), options, views, height, width, -1, chunk);
  EXPECT_EQ(spill_estimate.spilled, stream_bytes);
  EXPECT_LT(spill_estimate.total(), memory_estimate.total());
  EXPECT_GE(spill_estimate.total(), peak);
  // An observer needs every row at once: refused, not silently kept in memory.
  EXPECT_THROW(model.encode(
                   inputs, [](const std::string&, const Tensor&) {}, nullptr, chunk, &scratch),
               Error);
}

TEST(ScratchSpill, RowsComeBackAsWrittenAndOutOfRangeIsAnError) {
  TempDir dir;
  ScratchFile scratch(dir.path, 6 * 4 * 4);
  const std::vector<float> rows = {1, 2, 3, 4, 5, 6, 7, 8};
  scratch.write_rows(3, 2, 4, rows.data());
  std::vector<float> back(8, 0.0f);
  scratch.read_rows(3, 2, 4, back.data());
  EXPECT_EQ(back, rows);
  EXPECT_THROW(scratch.write_rows(5, 2, 4, rows.data()), std::logic_error);  // past the 6 rows reserved
}

TEST(ScratchSpill, ADirectoryThatCannotTakeItIsOneLineNamingTheFlag) {
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  TempDir dir;
  const std::string missing = dir.path + "/not-there";
  EXPECT_NE(message([&] { ScratchFile(missing, 1024); }).find("--scratch " + missing), std::string::npos);
  EXPECT_NE(message([&] { check_scratch_space(missing, 1024); }).find("cannot be read"), std::string::npos);
  const int64_t free = free_disk_bytes(dir.path);
  ASSERT_GT(free, 0);
  const std::string short_of_room = message([&] { check_scratch_space(dir.path, free + (int64_t(1) << 40)); });
  EXPECT_NE(short_of_room.find("--scratch " + dir.path), std::string::npos) << short_of_room;
  EXPECT_NE(short_of_room.find("is free there"), std::string::npos) << short_of_room;
  EXPECT_NE(message([&] { ScratchFile(dir.path, free + (int64_t(1) << 40)); }).find("cannot reserve"),
            std::string::npos);
  EXPECT_EQ(dir.entries(), 0);
  struct stat shm {};
  if (stat("/dev/shm", &shm) == 0 && in_memory_file_system("/dev/shm")) {
    EXPECT_NE(message([&] { check_scratch_space("/dev/shm", 1024); }).find("tmpfs"), std::string::npos);
  }
}

}  // namespace
}  // namespace lact
