// The safetensors reader and writer, and the config parser, on files built by hand.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/config.h"
#include "core/module_kind.h"
#include "core/safetensors.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "system/error.h"
#include "system/file_identity.h"
#include "system/mapped_file.h"
#include "tests/common/test_util.h"

namespace lact {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("lact_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

void write_raw(const std::string& path, const std::string& header, const std::vector<uint8_t>& data) {
  std::ofstream out(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>(n >> (8 * i)));
  out << header;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

using test::error_of;

TEST(Safetensors, RoundTripWithMetadata) {
  const std::string path = temp_path("roundtrip.safetensors");
  write_safetensors(path, {{"b", {{2, 3}, {1, 2, 3, 4, 5, 6}}}, {"a", {{1}, {-7.5f}}}}, {{"config", "{\"x\": 1}"}});
  const SafetensorsFile file(path);
  EXPECT_EQ(file.metadata().at("config"), "{\"x\": 1}");
  EXPECT_EQ(file.entry("b").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(file.read_floats("b"), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(file.read_floats("a"), (std::vector<float>{-7.5f}));
  std::remove(path.c_str());
}

TEST(Safetensors, HalfAndBfloat16Decode) {
  // F16: 1.0 = 0x3C00, -2.0 = 0xC000, 0.5 = 0x3800, smallest subnormal 0x0001 = 2^-24.
  // BF16: 1.0 = 0x3F80, -3.0 = 0xC040.
  const std::string path = temp_path("half.safetensors");
  write_raw(
      path,
      R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]}})",
      {0x00, 0x3C, 0x00, 0xC0, 0x00, 0x38, 0x01, 0x00, 0x80, 0x3F, 0x40, 0xC0});
  const SafetensorsFile file(path);
  EXPECT_EQ(file.read_floats("h"), (std::vector<float>{1.0f, -2.0f, 0.5f, std::ldexp(1.0f, -24)}));
  EXPECT_EQ(file.read_floats("b"), (std::vector<float>{1.0f, -3.0f}));
  std::remove(path.c_str());
}

// BF16 writing: round to nearest even (1 + 2^-8 is a tie and goes down to 1, 1 + 3 * 2^-8 up to 1 + 2^-6), the
// largest float becomes the largest bf16 (not infinity), two bytes per value, read back as the same floats.
TEST(Safetensors, WritesBfloat16RoundedToNearestEven) {
  const std::string path = temp_path("bf16.safetensors");
  const float largest_bf16 = std::ldexp(255.0f / 128.0f, 127);  // 0x7F7F
  write_safetensors(path, {{"w", {{5}, {1.0f, 1.00390625f, 1.01171875f, -3.0f, 3.4028235e38f}}}}, {},
                    StoredDtype::BF16);
  const SafetensorsFile file(path);
  EXPECT_EQ(file.entry("w").dtype, "BF16");
  EXPECT_EQ(file.entry("w").end - file.entry("w").begin, 10u);
  EXPECT_EQ(file.read_floats("w"), (std::vector<float>{1.0f, 1.0f, 1.015625f, -3.0f, largest_bf16}));
  std::remove(path.c_str());
  EXPECT_NE(
      error_of([] { parse_stored_dtype("fp16", "--state-dtype"); }).find("--state-dtype: 'fp16' is not fp32 or bf16"),
      std::string::npos);
}

// load_tensor: an aligned F32 tensor used in place from the mapped file on the CPU backend (outliving the
// SafetensorsFile), a misaligned one and a BF16 one converted into backend memory, NaN refused either way.
TEST(Safetensors, LoadTensorInPlaceOrConverted) {
  const std::string path = temp_path("load.safetensors");
  // Header of 80 bytes + 8: "a" starts 4-byte aligned, "m" at data offset 10 is not, "b" is BF16, "n" holds NaN.
  std::string header =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"m":{"dtype":"F32","shape":[1],"data_offsets":[10,14]},)"
      R"("b":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]},"n":{"dtype":"F32","shape":[1],"data_offsets":[14,18]}})";
  while (header.size() % 8) header.push_back(' ');
  std::vector<uint8_t> data(18, 0);
  const float a[2] = {1.5f, -2.25f}, m = 3.0f, nan = std::nanf("");
  std::memcpy(data.data(), a, 8);
  data[8] = 0x40, data[9] = 0xC0;  // BF16 -3.0
  std::memcpy(data.data() + 10, &m, 4);
  std::memcpy(data.data() + 14, &nan, 4);
  write_raw(path, header, data);
  auto be = make_cpu_backend(1);
  Tensor in_place, copied, converted;
  {
    const SafetensorsFile file(path);
    const int64_t allocated = be->allocated_memory();
    in_place = file.load_tensor(*be, "a", {2}, "the test");
    EXPECT_EQ(be->allocated_memory(), allocated);  // no backend allocation: the file's bytes
    copied = file.load_tensor(*be, "m", {1}, "the test");
    EXPECT_GT(be->allocated_memory(), allocated);
    converted = file.load_tensor(*be, "b", {1}, "the test");
    EXPECT_NE(error_of([&] { file.load_tensor(*be, "n", {1}, "the test"); }).find("NaN"), std::string::npos);
    EXPECT_NE(error_of([&] { file.load_tensor(*be, "a", {3}, "the test"); }).find("the test needs [3]"),
              std::string::npos);
  }
  std::remove(path.c_str());  // the mapping outlives the name and the SafetensorsFile
  EXPECT_EQ(be->to_host(in_place), (std::vector<float>{1.5f, -2.25f}));
  EXPECT_EQ(be->to_host(copied), (std::vector<float>{3.0f}));
  EXPECT_EQ(be->to_host(converted), (std::vector<float>{-3.0f}));
  in_place.data()[0] = 7.0f;  // copy-on-write: the process's own page, the file untouched
  EXPECT_EQ(in_place.data()[0], 7.0f);
}

TEST(Safetensors, BadFilesNameTheFileAndTheProblem) {
  const std::string path = temp_path("bad.safetensors");
  EXPECT_NE(error_of([&] { SafetensorsFile f(path + ".missing"); }).find("cannot open"), std::string::npos);
  write_raw(path, R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", {0, 0, 0, 0});
  std::string e = error_of([&] { SafetensorsFile f(path); });
  EXPECT_NE(e.find(path), std::string::npos);
  EXPECT_NE(e.find("truncated"), std::string::npos);
  write_raw(path, "{not json", {});
  EXPECT_NE(error_of([&] { SafetensorsFile f(path); }).find("corrupt"), std::string::npos);
  write_raw(path, R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", std::vector<uint8_t>(16));
  EXPECT_NE(error_of([&] { SafetensorsFile f(path); }).find("does not match its shape"), std::string::npos);
  write_raw(path, R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::vector<uint8_t>(16));
  EXPECT_NE(error_of([&] { SafetensorsFile(path).read_floats("u"); }).find("missing tensor 'u'"), std::string::npos);
  std::remove(path.c_str());
}

// A file written "long ago": a change right after lact opens it then always gets another modification time
// (timestamps tick in milliseconds; the guard cannot see a rewrite within the tick of the previous write).
void age(const std::string& path) {
  struct timespec times[2] = {{1000000000, 0}, {1000000000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

void overwrite_at(const std::string& path, long offset, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fseek(f, offset, SEEK_SET);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

// check_mapped_files_unchanged: a file written in place (same size) or truncated under a live mapping is named;
// one replaced by rename is not (the mapping keeps the file it opened, unchanged); a freed mapping is forgotten.
TEST(MappedFile, ChangesAfterOpeningAreSeen) {
  const std::string path = temp_path("changed.safetensors"), other = temp_path("other.safetensors");
  write_safetensors(path, {{"w", {{4}, {1, 2, 3, 4}}}}, {});
  age(path);
  auto be = make_cpu_backend(1);
  Tensor w;
  {
    const SafetensorsFile file(path);
    w = file.load_tensor(*be, "w", {4}, "the test");  // in place: keeps the mapping alive
  }
  EXPECT_EQ(error_of(check_mapped_files_unchanged), "");
  const std::string nan(4, '\xff');  // a NaN over the last value, the size unchanged
  overwrite_at(path, static_cast<long>(std::filesystem::file_size(path) - 4), nan);
  const std::string e = error_of(check_mapped_files_unchanged);
  EXPECT_EQ(e, path + ": changed while lact was using it (modified after lact opened it)");
  w = Tensor();  // the last owner lets go: nothing left to check
  EXPECT_EQ(error_of(check_mapped_files_unchanged), "");

  write_safetensors(path, {{"w", {{4}, {1, 2, 3, 4}}}}, {});
  age(path);
  w = SafetensorsFile(path).load_tensor(*be, "w", {4}, "the test");
  ASSERT_EQ(truncate(path.c_str(), 8), 0);
  EXPECT_NE(error_of(check_mapped_files_unchanged).find(path + ": changed while lact was using it (now 8 bytes"),
            std::string::npos);
  w = Tensor();

  write_safetensors(path, {{"w", {{4}, {1, 2, 3, 4}}}}, {});
  w = SafetensorsFile(path).load_tensor(*be, "w", {4}, "the test");
  write_safetensors(other, {{"w", {{4}, {5, 6, 7, 8}}}}, {});
  ASSERT_EQ(std::rename(other.c_str(), path.c_str()), 0);  // an atomic re-export: the run keeps its file
  EXPECT_EQ(error_of(check_mapped_files_unchanged), "");
  EXPECT_EQ(be->to_host(w), (std::vector<float>{1, 2, 3, 4}));
  w = Tensor();
  std::remove(path.c_str());
}

// A SIGBUS from a truncated mapping ends the process with the one line naming the file, exit status 1.
TEST(MappedFile, TruncatedUnderTheMappingEndsInOneLine) {
  if (std::getenv("LACT_SANITIZED")) GTEST_SKIP() << "the sanitizer's own SIGBUS handler reports first";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string path = temp_path("truncated.safetensors");
  write_safetensors(path, {{"w", {{8192}, std::vector<float>(8192, 1.0f)}}}, {});
  auto read_after_truncation = [&] {
    const auto file = MappedFile::open(path);
    if (truncate(path.c_str(), 0) != 0) std::_Exit(3);
    volatile uint8_t last = file->data()[file->size() - 1];  // past the end of the file now
    (void)last;
    std::_Exit(0);
  };
  // The child runs this test again (threadsafe style): its own pid names its file.
  EXPECT_EXIT(read_after_truncation(), ::testing::ExitedWithCode(1),
              "lact: /[^ ]*_truncated\\.safetensors: changed while lact was using it \\(truncated\\?\\)");
  std::remove(path.c_str());
}

// The content identity: the same for the mapped bytes and the file read, another for one byte changed; above
// 64 MiB sampled (a byte in a sampled block changes it, one between the samples does not: the documented limit).
TEST(FileIdentity, WholeFilesAndSampledLargeOnes) {
  const std::string path = temp_path("identity.safetensors");
  write_safetensors(path, {{"w", {{1000}, std::vector<float>(1000, 0.5f)}}}, {});
  const std::string before = file_identity(path);
  EXPECT_EQ(before, SafetensorsFile(path).content_identity());
  EXPECT_EQ(before.substr(0, before.find(':')), std::to_string(std::filesystem::file_size(path)));
  overwrite_at(path, 3000, std::string(1, '\x01'));
  EXPECT_NE(file_identity(path), before);

  const uint64_t large = (64ull << 20) + 4096;
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(large)), 0);  // sparse: zeros
  const std::string sparse = file_identity(path);
  EXPECT_EQ(sparse.substr(0, sparse.find(':')), std::to_string(large));
  overwrite_at(path, static_cast<long>(large - 1), "x");  // the last block is sampled
  const std::string last = file_identity(path);
  EXPECT_NE(last, sparse);
  overwrite_at(path, 3 << 19, "x");  // 1.5 MiB: between the first block (at 1 MiB) and the second (at ~2 MiB)
  EXPECT_EQ(file_identity(path), last);
  {
    const auto mapped = MappedFile::open(path);
    EXPECT_EQ(content_identity(mapped->data(), mapped->size()), last);
  }
  std::remove(path.c_str());
}

TEST(Config, ParsesTheOfficialLayoutAndRejectsBadOnes) {
  const ModelConfig c = builtin_model_config("lact_l24_d768_ttt2x");
  EXPECT_EQ(c.layers, 24);
  ASSERT_EQ(c.block.size(), 3u);
  EXPECT_STREQ(c.block[1].kind->class_name(), "FastWeightGluMLPMultihead");
  EXPECT_EQ(c.block[1].hidden(c.dim), 1536);
  EXPECT_EQ(c.state_floats_per_layer(0), 6LL * 768 * 768);  // 6 d^2 per block (the paper)
  nlohmann::json bad = c.source;
  bad["block_config"][1]["params"]["head_dim"] = 100;
  EXPECT_NE(error_of([&] { parse_model_config(bad, "x.yaml"); }).find("does not divide"), std::string::npos);
  bad = c.source;
  bad["block_config"][0]["type"] = "model.Unknown";
  EXPECT_NE(error_of([&] { parse_model_config(bad, "x.yaml"); }).find("unknown block module"), std::string::npos);
  bad = c.source;
  bad.erase("dim");
  EXPECT_NE(error_of([&] { parse_model_config(bad, "x.yaml"); }).find("x.yaml: config has no field 'dim'"),
            std::string::npos);
}

}  // namespace
}  // namespace lact
