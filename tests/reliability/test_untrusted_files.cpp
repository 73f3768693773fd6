// The readers and writers that face untrusted files: atomic writes (a failure leaves the old file and no
// temporary), regular files only, bounded JSON nesting, strict sizes, overflow-safe safetensors shapes and
// config limits. Expected values are worked out by hand.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/camera.h"
#include "core/config.h"
#include "core/memory_estimate.h"
#include "core/safetensors.h"
#include "system/error.h"
#include "system/file_io.h"
#include "system/json_text.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

namespace fs = std::filesystem;

fs::path fresh_folder(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("lact_untrusted_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using test::error_of;

TEST(AtomicFile, CommitReplacesAndLeavesNoTemporary) {
  const fs::path dir = fresh_folder("commit");
  const std::string path = (dir / "out.txt").string();
  write_file_atomically(path, "old");
  write_file_atomically(path, "new contents");
  EXPECT_EQ(read_text(path), "new contents");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 1);
  fs::remove_all(dir);
}

// A replaced file kept 0666 less the umask whatever it was: a user's private 0600 state became 0644 by --force.
TEST(AtomicFile, ReplacedFileKeepsItsPermissions) {
  const fs::path dir = fresh_folder("mode");
  const mode_t saved = ::umask(022);
  const auto mode_of = [](const fs::path& p) {
    struct stat info {};
    EXPECT_EQ(::stat(p.c_str(), &info), 0) << p;
    return info.st_mode & 07777;
  };
  const fs::path fresh = dir / "fresh.txt", private_file = dir / "private.txt", shared = dir / "shared.txt";
  write_file_atomically(fresh.string(), "new");
  EXPECT_EQ(mode_of(fresh), 0644u);  // 0666 less the umask 022
  for (const auto& [path, mode] : {std::pair{private_file, 0600u}, std::pair{shared, 0664u}}) {
    write_file_atomically(path.string(), "old");
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
    write_file_atomically(path.string(), "replaced");
    EXPECT_EQ(read_text(path), "replaced");
    EXPECT_EQ(mode_of(path), mode) << path;
  }
  const fs::path setuid = dir / "setuid.txt";  // never a set-user-ID bit on a file lact wrote
  write_file_atomically(setuid.string(), "old");
  ASSERT_EQ(::chmod(setuid.c_str(), 04755), 0);
  write_file_atomically(setuid.string(), "replaced");
  EXPECT_EQ(mode_of(setuid), 0755u);
  ::umask(saved);
  fs::remove_all(dir);
}

TEST(AtomicFile, UncommittedOrFailedWriteKeepsTheOldFile) {
  const fs::path dir = fresh_folder("abort");
  const std::string path = (dir / "state.bin").string();
  write_file_atomically(path, "good");
  {
    AtomicFile file(path);
    file.write("partial");
  }  // destroyed without commit: as if the process had failed half way
  EXPECT_EQ(read_text(path), "good");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 1);

  // A "full disk": a file-size limit makes the write fail (EFBIG) part way; the old file stays.
  struct rlimit old_limit {};
  getrlimit(RLIMIT_FSIZE, &old_limit);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 1000;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string error = error_of([&] { write_file_atomically(path, std::string(5000, 'x')); });
  setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(error.find("state.bin"), std::string::npos) << error;
  EXPECT_NE(error.find("write failed"), std::string::npos) << error;
  EXPECT_EQ(read_text(path), "good");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), {}), 1);
  fs::remove_all(dir);
}

TEST(AtomicFile, MissingFolderNamesTheFile) {
  const std::string error = error_of([] { write_file_atomically("/nonexistent_lact_dir/x.bin", "x"); });
  EXPECT_NE(error.find("/nonexistent_lact_dir/x.bin"), std::string::npos) << error;
}

TEST(RegularFiles, FifoFolderAndMissingAreRefusedWithoutBlocking) {
  const fs::path dir = fresh_folder("fifo");
  const std::string fifo = (dir / "f.safetensors").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { require_regular_file(fifo); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { SafetensorsFile f(fifo); }).find("not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { read_whole_file(dir.string(), 100); }).find("is a folder"), std::string::npos);
  EXPECT_NE(error_of([&] { read_whole_file((dir / "none").string(), 100); }).find("no such file"), std::string::npos);
  const std::string big = (dir / "big.json").string();
  write_file_atomically(big, std::string(200, ' '));
  EXPECT_NE(error_of([&] { read_whole_file(big, 100); }).find("200 bytes"), std::string::npos);
  EXPECT_EQ(read_whole_file(big, 200).size(), 200u);
  fs::remove_all(dir);
}

TEST(JsonText, NestingIsBoundedAndStringsDoNotCount) {
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(parse_json_text(ok, "ok").is_array());
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_NE(error_of([&] { parse_json_text(deep, "deep.json"); }).find("deep.json: JSON nested more"),
            std::string::npos);
  // Brackets inside strings (with escaped quotes) are text, not nesting.
  const std::string in_string = "{\"a\": \"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  EXPECT_EQ(parse_json_text(in_string, "s")["a"].get<std::string>().size(), 2001u);
  EXPECT_NE(error_of([&] { parse_json_text("{\"a\": ", "bad.json"); }).find("bad.json: corrupt JSON"),
            std::string::npos);
}

TEST(ImageSize, StrictHxW) {
  int h = 0, w = 0;
  EXPECT_TRUE(parse_image_size("256x448", h, w));
  EXPECT_EQ(h, 256);
  EXPECT_EQ(w, 448);
  EXPECT_TRUE(parse_image_size("65536X1", h, w));
  for (const char* bad : {"", "x", "0x8", "8x0", "65537x8", "8x2147483640", "99999999999x8", "-8x8", "8x8x8", " 8x8",
                          "8x8 ", "8.0x8", "+8x8"})
    EXPECT_FALSE(parse_image_size(bad, h, w)) << bad;
}

TEST(SafetensorsUntrusted, WrappingShapesAndOverlappingDataAreRefused) {
  const fs::path dir = fresh_folder("st");
  auto write = [&](const std::string& name, const std::string& header, size_t data_bytes) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i));
    const std::string path = (dir / name).string();
    write_file_atomically(path, bytes + header + std::string(data_bytes, '\0'));
    return path;
  };
  // 2^62 x 4 elements of 4 bytes: the count wraps 2^64 to 0, which equals the empty data range.
  const std::string wrap =
      write("wrap.st", R"({"t":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", 0);
  EXPECT_NE(error_of([&] { SafetensorsFile f(wrap); }).find("overflows"), std::string::npos);
  const std::string overlap = write(
      "overlap.st",
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
      24);
  EXPECT_NE(error_of([&] { SafetensorsFile f(overlap); }).find("overlapping"), std::string::npos);
  const std::string fine = write(
      "fine.st",
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})",
      24);
  EXPECT_EQ(SafetensorsFile(fine).read_floats("b").size(), 2u);
  const std::string fractional = write("frac.st", R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4);
  EXPECT_NE(error_of([&] { SafetensorsFile f(fractional); }).find("non-integer"), std::string::npos);
  // The tensors tile the data section, as the Python library requires: bytes after the last tensor (a file with
  // something appended) or between two (a hole) are refused, naming where.
  const std::string tail = write("tail.st", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 20);
  EXPECT_NE(
      error_of([&] {
        SafetensorsFile f(tail);
      }).find("tail.st: 4 bytes follow the last tensor's data (the data section is 20 bytes, the tensors take 16)"),
      std::string::npos);
  const std::string hole = write(
      "hole.st",
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})",
      20);
  EXPECT_NE(
      error_of([&] {
        SafetensorsFile f(hole);
      }).find("hole.st: bytes 8..12 of the data section belong to no tensor (a hole between tensors 'a' and 'b')"),
      std::string::npos);
  const std::string first = write("first.st", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12);
  EXPECT_NE(error_of([&] { SafetensorsFile f(first); }).find("bytes 0..4 of the data section belong to no tensor"),
            std::string::npos);
  fs::remove_all(dir);
}

// A header length that reaches into the tensor data (a damaged first 8 bytes) is named as such. Before, the binary
// bytes were judged as JSON: with 65 '[' bytes among them the line said "JSON nested more than 64 levels deep",
// otherwise "corrupt JSON (... invalid literal ...)". Tab, line feed and carriage return are JSON whitespace.
TEST(SafetensorsUntrusted, AHeaderLengthIntoTheDataIsNamed) {
  const fs::path dir = fresh_folder("st_length");
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  auto write = [&](const std::string& name, const std::string& text, uint64_t length, const std::string& data) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(length >> (8 * i));
    const std::string path = (dir / name).string();
    write_file_atomically(path, bytes + text + data);
    return path;
  };
  const std::string data = std::string(65, '[') + std::string(1, '\0') + std::string(6, '[');  // 72 binary bytes
  const std::string into = write("into.st", header, header.size() + 72, data);
  EXPECT_NE(error_of([&] { SafetensorsFile f(into); })
                .find("into.st: corrupt safetensors header: byte " + std::to_string(header.size() + 65) + " of its " +
                      std::to_string(header.size() + 72) + " is binary, not JSON text"),
            std::string::npos);
  const std::string spaced = "{\t\"a\":\r\n" + header.substr(5) + "  ";
  EXPECT_EQ(SafetensorsFile(write("spaced.st", spaced, spaced.size(), std::string(8, '\0'))).read_floats("a").size(),
            2u);
  fs::remove_all(dir);
}

// Metadata maps strings to strings. A value of another type was dropped, so the file read as if the field were
// absent: an image_size of 64 (a number) rendered at another default size, an input_views of null asked for
// --inputs. Now one line naming the file, the field and the type.
TEST(SafetensorsUntrusted, MetadataValuesAreStrings) {
  const fs::path dir = fresh_folder("st_metadata");
  const std::string tensor = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  auto write = [&](const std::string& name, const std::string& metadata) {
    const std::string header = "{\"__metadata__\":" + metadata + "," + tensor + "}";
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(static_cast<uint64_t>(header.size()) >> (8 * i));
    const std::string path = (dir / name).string();
    write_file_atomically(path, bytes + header + std::string(8, '\0'));
    return path;
  };
  for (const auto& [value, type] : {std::pair{"64", "number"}, std::pair{"null", "null"}, std::pair{"{}", "object"},
                                    std::pair{"true", "boolean"}, std::pair{"[\"64x64\"]", "array"}}) {
    const std::string path = write("m.st", std::string(R"({"format":"lact model","image_size":)") + value + "}");
    EXPECT_NE(error_of([&] {
                SafetensorsFile f(path);
              }).find("m.st: __metadata__ field 'image_size' is a JSON " + std::string(type) + ", not a string"),
              std::string::npos)
        << value;
  }
  const SafetensorsFile fine(write("fine.st", R"({"format":"lact model","image_size":"64x64"})"));
  EXPECT_EQ(fine.metadata().at("image_size"), "64x64");
  fs::remove_all(dir);
}

nlohmann::json tiny_config() {
  return {{"patch_size", 8},
          {"dim", 64},
          {"layers", 2},
          {"block_config",
           {{{"type", "model.SelfAttention"}, {"length_dim", "l"}, {"params", {{"head_dim", 32}}}},
            {{"type", "lact_ttt.FastWeightGluMLPMultihead"},
             {"length_dim", "vl"},
             {"params", {{"head_dim", 64}, {"inter_multi", 2}, {"muon_update_steps", 5}}}},
            {{"type", "model.MLP"}, {"length_dim", "vl"}, {"params", {{"inter_multi", 4}}}}}}};
}

TEST(ConfigLimits, OutOfRangeValuesAreRefusedByName) {
  const ModelConfig c = parse_model_config(tiny_config(), "ok");
  EXPECT_EQ(c.block[2].heads(c.dim), 0);  // an MLP has no heads (and no division by its head_dim of 0)
  EXPECT_EQ(c.block[1].heads(c.dim), 1);
  auto refused = [](nlohmann::json j, const std::string& field) {
    const std::string e = error_of([&] { parse_model_config(j, "m.safetensors"); });
    EXPECT_NE(e.find("m.safetensors"), std::string::npos) << e;
    EXPECT_NE(e.find(field), std::string::npos) << e;
  };
  nlohmann::json j = tiny_config();
  j["layers"] = 2000000000;
  refused(j, "layers");
  j = tiny_config();
  j["dim"] = 1 << 20;
  refused(j, "dim");
  j = tiny_config();
  j["block_config"][1]["params"]["muon_update_steps"] = 1000000000;
  refused(j, "muon_update_steps");
  j = tiny_config();
  j["block_config"][2]["params"]["inter_multi"] = 1e9;
  refused(j, "inter_multi");
  // length_dim is "l" or "vl" in the official model; the MLP ignores it, but "xyz" is a broken config, not a choice.
  j = tiny_config();
  j["block_config"][2]["length_dim"] = "xyz";
  refused(j, "config field 'length_dim' of 'model.MLP' is 'xyz'");
  j = tiny_config();
  j["block_config"][2]["length_dim"] = "l";  // both known values parse for the MLP
  EXPECT_EQ(parse_model_config(j, "ok").block[2].length_dim, "l");
}

TEST(MemoryEstimate, HugeSizesSaturateInsteadOfOverflowing) {
  const ModelConfig c = parse_model_config(tiny_config(), "ok");
  const EncodeMemory small = estimate_encode_memory(c, {}, 1, 64, 64);
  // 64 tokens x (3*64 pixels + 768 ray channels + 64 dim) floats, by hand.
  EXPECT_EQ(small.embedding, 64 * (192 + 768 + 64) * 4);
  const EncodeMemory huge = estimate_encode_memory(c, {}, 2000000000, 65536, 65536);
  EXPECT_GT(huge.total(), int64_t{1} << 62);
  EXPECT_GT(estimate_encode_memory(c, {}, 1, 8, 2147483640).total(), int64_t{1} << 36);
  EXPECT_THROW(check_encode_fits(huge, int64_t{1} << 40, "test"), Error);
}

}  // namespace
}  // namespace lact
