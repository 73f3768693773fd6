// The pure parts of `lact import` (issue 37): COLMAP's progress lines, the video's frame windows, a JPEG's EXIF
// orientation (hand-built EXIF blocks in both byte orders, and broken ones that must read as "upright"), the
// orientations against a 2x3 image turned by hand, the area-average shrink and the sharpness measure. Issue 48:
// COLMAP's output as untrusted text (lines of 200,000 digits, numbers past int, lines without an end), ffmpeg's
// PAM frames read piece by piece, and a program that stalls.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "import/colmap_steps.h"
#include "import/image_orientation.h"
#include "import/photo_order.h"
#include "import/video_frames.h"
#include "system/error.h"
#include "system/subprocess.h"

namespace lact {
namespace {

TEST(ColmapProgress, ReadsEachStepsLines) {
  int done = 0, total = 0;
  EXPECT_TRUE(parse_colmap_progress("Processed file [3/36]", done, total));
  EXPECT_EQ(done, 3);
  EXPECT_EQ(total, 36);
  EXPECT_TRUE(parse_colmap_progress("Matching block [2/4, 3/4] in 1.2s", done, total));
  EXPECT_EQ(done, 7);  // row 2 of 4, column 3: the 7th of 16 blocks
  EXPECT_EQ(total, 16);
  EXPECT_TRUE(parse_colmap_progress("Matching image [5/60] in 0.3s", done, total));
  EXPECT_EQ(done, 5);
  EXPECT_EQ(total, 60);
  EXPECT_TRUE(parse_colmap_progress("Registering image #12 (9)", done, total));
  EXPECT_EQ(done, 9);
  EXPECT_EQ(total, 0);  // the mapper does not say out of how many
  EXPECT_FALSE(parse_colmap_progress("Bundle adjustment report", done, total));
}

// std::regex recursed once per digit (a stack overflow at 200,000) and std::stoi threw a bare "stoi".
TEST(ColmapProgress, OddLinesAreNotProgress) {
  int done = -7, total = -7;
  const std::string digits(200000, '7');
  EXPECT_FALSE(parse_colmap_progress("Processed file [" + digits + "/36]", done, total));
  EXPECT_FALSE(parse_colmap_progress("Matching image [3/" + digits + "]", done, total));
  EXPECT_FALSE(parse_colmap_progress("Processed file [99999999999/36]", done, total));    // past int
  EXPECT_FALSE(parse_colmap_progress("Processed file [1234567890/36]", done, total));     // 10 digits
  EXPECT_FALSE(parse_colmap_progress("Matching block [2/99999, 3/99999]", done, total));  // 10^10 blocks
  EXPECT_FALSE(parse_colmap_progress("Matching block [0/4, 1/4]", done, total));          // rows count from 1
  EXPECT_FALSE(parse_colmap_progress("Registering image #" + digits + " (3)", done, total));
  EXPECT_FALSE(parse_colmap_progress("Processed file [-3/36]", done, total));
  EXPECT_FALSE(parse_colmap_progress("Processed file [3/36", done, total));
  EXPECT_EQ(done, -7);  // nothing written for a refused line
  // The first occurrence that reads whole counts, as a regex search found it.
  EXPECT_TRUE(parse_colmap_progress("Processed file [x] Processed file [999999999/999999999]", done, total));
  EXPECT_EQ(done, 999999999);
  EXPECT_EQ(total, 999999999);
}

// The mapper's "Registering image #k (n)" counts the model it grows, which starts again for each model: the
// progress went 3/30, 7/30, 5/30, 4/30.
TEST(ColmapProgress, MappingNeverGoesBack) {
  StepProgress progress("mapping", 30, true, 0.0);
  std::vector<std::string> shown;
  for (int n : {3, 7, 5, 4, 9})
    shown.push_back(progress.line("Registering image #" + std::to_string(n + 1) + " (" + std::to_string(n) + ")"));
  const std::vector<int> want = {3, 7, 7, 7, 9};
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(shown[i].rfind("lact import: mapping " + std::to_string(want[i]) + "/30, ", 0), 0u) << shown[i];
  EXPECT_EQ(progress.line("Bundle adjustment report"), "");
}

// The mapper's failure said only "ERROR: failed to create sparse model"; the cause is a line before it.
TEST(ColmapFailure, KnownLinesSayWhyAndWhatToDo) {
  const std::string cause = colmap_failure_cause("  => No good initial image pair found.");
  EXPECT_NE(cause.find("no pair of photos to start"), std::string::npos) << cause;
  for (const char* words : {"overlap", "parallax", "blur", "more photos"})
    EXPECT_NE(cause.find(words), std::string::npos) << words;
  EXPECT_NE(colmap_failure_cause("No images with matches found in the database."), "");
  EXPECT_NE(colmap_failure_cause("Discarding reconstruction due to insufficient size"), "");
  EXPECT_EQ(colmap_failure_cause("ERROR: failed to create sparse model"), "");
  EXPECT_EQ(colmap_failure_cause("Processed file [3/4]"), "");
}

TEST(PhotoOrder, NaturalOrderReadsNumbersByValue) {
  EXPECT_TRUE(natural_less("shot 2.jpg", "shot 10.jpg"));
  EXPECT_FALSE(natural_less("shot 10.jpg", "shot 2.jpg"));
  EXPECT_TRUE(natural_less("frame_00002.png", "frame_00010.png"));
  EXPECT_TRUE(natural_less("a01.jpg", "a1.jpg"));  // equal numbers: byte order
  EXPECT_TRUE(natural_less("IMG_9.JPG", "img_1.jpg"));
  EXPECT_FALSE(natural_less("x", "x"));
}

TEST(PhotoOrder, WarnsWhenNameOrderIsNotNumberOrder) {
  std::vector<std::string> names;
  for (int i = 1; i <= 15; ++i) names.push_back("shot " + std::to_string(i) + ".jpg");
  std::sort(names.begin(), names.end());  // as import_image_folder lists them: 1, 10, ..., 15, 2, ...
  const std::string warning = name_order_warning(names);
  EXPECT_NE(warning.find("'shot 15.jpg' sorts before 'shot 2.jpg'"), std::string::npos) << warning;
  EXPECT_NE(warning.find("zero-padded"), std::string::npos) << warning;
  EXPECT_EQ(name_order_warning({"frame_00001.png", "frame_00002.png", "frame_00010.png"}), "");
  EXPECT_EQ(name_order_warning({"a.jpg", "b.jpg", "c.png"}), "");
  EXPECT_EQ(name_order_warning({"frame1500.jpg", "frame1600.jpg", "gray1520.jpg"}), "");
}

TEST(OutputLines, HoldsAtMostOneCutLine) {
  std::vector<std::string> lines;
  OutputLines splitter([&](const std::string& line) { lines.push_back(line); }, 24);
  const std::string flood(1 << 20, 'x');  // a megabyte without a line break, in pieces
  for (size_t at = 0; at < flood.size(); at += 4096) {
    splitter.feed(flood.data() + at, 4096);
    ASSERT_LE(splitter.buffered(), 24u) << at;
  }
  const std::string rest = "yy\rProcessed file [3/4]\nProcessed file [33/44] and more\nlast";
  for (char c : rest) splitter.feed(&c, 1);  // byte by byte
  splitter.finish();
  EXPECT_EQ(lines, (std::vector<std::string>{std::string(24, 'x'), "Processed file [3/4]", "Processed file [33/44] a",
                                             "last"}));
}

// PAM frames as ffmpeg writes them: `count` frames of 3x2 pixels, pixel p of frame f holding bytes f, p, 7.
std::string pam_stream(int count) {
  std::string out;
  for (int f = 0; f < count; ++f) {
    out += "P7\nWIDTH 3\nHEIGHT 2\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n";
    for (int p = 0; p < 6; ++p) out += std::string{char(f), char(p), char(7)};
  }
  return out;
}

TEST(PamFrames, ReadsTheWantedFramesFromPiecesOfAnySize) {
  const std::string stream = pam_stream(5);
  for (size_t piece : {size_t{1}, size_t{7}, size_t{50}, stream.size()}) {
    std::vector<long> seen;
    PamFrames frames(
        "test", [](long i) { return i == 1 || i == 3; },
        [&](long i, int w, int h, const uint8_t* rgb) {
          EXPECT_EQ(w, 3);
          EXPECT_EQ(h, 2);
          for (int p = 0; p < 6; ++p) {
            EXPECT_EQ(rgb[p * 3], i);
            EXPECT_EQ(rgb[p * 3 + 1], p);
          }
          seen.push_back(i);
          return true;
        });
    for (size_t at = 0; at < stream.size(); at += piece)
      EXPECT_TRUE(frames.feed(stream.data() + at, std::min(piece, stream.size() - at)));
    EXPECT_EQ(seen, (std::vector<long>{1, 3})) << piece;
    EXPECT_EQ(frames.frames(), 5);
  }
  PamFrames stop(
      "test", [](long) { return true; }, [](long i, int, int, const uint8_t*) { return i < 2; });
  EXPECT_FALSE(stop.feed(stream.data(), stream.size()));  // frame 2 said: nothing more wanted
  EXPECT_EQ(stop.frames(), 3);
}

TEST(PamFrames, RefusesOtherHeadersAndHugeSizes) {
  const auto refuses = [](const std::string& bytes, const std::string& why) {
    PamFrames frames(
        "ffmpeg's frames", [](long) { return true; }, [](long, int, int, const uint8_t*) { return true; });
    try {
      frames.feed(bytes.data(), bytes.size());
      ADD_FAILURE() << "accepted " << bytes.substr(0, 40);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refuses("P7\nWIDTH 3\nHEIGHT 2\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n", "not an 8-bit RGB PAM");
  refuses("P6\n3 2\n255\n", "not an 8-bit RGB PAM");
  refuses("P7\nWIDTH 99999999999999\nHEIGHT 2\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n", "not an 8-bit");
  refuses("P7\nWIDTH 60000\nHEIGHT 60000\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n", "exceeds the limit");
  refuses("P7\n" + std::string(1000, '#'), "no PAM header");
}

TEST(Subprocess, AStalledProgramIsStopped) {
  StreamLimits limits;
  limits.stall_s = 0.5;
  limits.stall_hint = "--stall-minutes sets the limit";
  std::string said;
  try {
    run_program_streamed(
        {"/bin/sh", "-c", "echo started; exec sleep 60"}, [&](const std::string& piece) { said += piece; }, limits,
        "sleeper");
    ADD_FAILURE() << "a silent program was waited for";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "sleeper: no output and no progress for 0.5 s (stopped it; --stall-minutes sets "
              "the limit)");
  }
  EXPECT_EQ(said, "started\n");
  // A program that prints nothing but gets on (its database grows) is waited for.
  limits.progressed = []() { return true; };
  EXPECT_EQ(run_program_streamed(
                {"/bin/sh", "-c", "sleep 2; exit 3"}, [](const std::string&) {}, limits, "grower"),
            3);
}

TEST(Subprocess, PipedOutputCanBeCutShort) {
  std::string errors, out;
  const int status = run_program_piped(
      {"/bin/sh", "-c", "echo oops >&2; while :; do echo yes; done"},
      [&](const std::string& piece) {
        out += piece;
        return out.size() < 100000;
      },
      errors, {}, "yes");
  EXPECT_EQ(status, 0);
  EXPECT_GE(out.size(), 100000u);
  EXPECT_EQ(errors, "oops\n");
}

TEST(Subprocess, AnErrorQuotesOneLineOfWhatTheProgramSaid) {
  EXPECT_EQ(first_output_line("\n \r\n  warning: x  \t\nerror: y\n"), "warning: x");
  EXPECT_EQ(last_output_line("warning: x\n  error: y \t\r\n\n  \n"), "  error: y");
  EXPECT_EQ(last_output_line("one line, no break"), "one line, no break");
  EXPECT_EQ(first_output_line(" \n\t\r\n"), "");
  EXPECT_EQ(last_output_line(""), "");
  EXPECT_EQ(first_output_line(std::string(500, 'a') + "\nb"), std::string(200, 'a'));
  EXPECT_EQ(last_output_line("a\n" + std::string(500, 'b'), 300), std::string(300, 'b'));
}

TEST(VideoFrames, WindowsSpreadEvenly) {
  const auto one = frame_windows(60, 30, 1);  // windows of 2 frames: the second of each (its middle)
  ASSERT_EQ(one.size(), 30u);
  for (int w = 0; w < 30; ++w) EXPECT_EQ(one[w], std::vector<long>{2 * w + 1}) << w;
  const auto three = frame_windows(12, 4, 3);  // windows of 3: every frame a candidate
  ASSERT_EQ(three.size(), 4u);
  EXPECT_EQ(three[2], (std::vector<long>{6, 7, 8}));
  EXPECT_EQ(frame_windows(5, 60, 1).size(), 5u);  // fewer frames than wanted: all of them
  EXPECT_EQ(frame_windows(100, 10, 3)[9], (std::vector<long>{91, 95, 98}));
}

// A JPEG holding only SOI, an APP1 EXIF block with one IFD0 entry (tag, type, value) and EOI.
std::string jpeg_with_tag(bool little, uint16_t tag, uint16_t type, uint16_t value) {
  auto u16 = [&](uint16_t v) {
    return little ? std::string{char(v & 255), char(v >> 8)} : std::string{char(v >> 8), char(v & 255)};
  };
  std::string tiff = little ? std::string("II") + u16(42) + std::string("\x08\0\0\0", 4)
                            : std::string("MM") + u16(42) + std::string("\0\0\0\x08", 4);
  tiff += u16(1) + u16(tag) + u16(type) + (little ? std::string("\x01\0\0\0", 4) : std::string("\0\0\0\x01", 4)) +
          u16(value) + std::string(2, '\0') + std::string(4, '\0');
  const std::string body = std::string("Exif\0\0", 6) + tiff;
  const size_t length = body.size() + 2;
  return std::string("\xFF\xD8\xFF\xE1", 4) + char(length >> 8) + char(length & 255) + body + "\xFF\xD9";
}

TEST(ExifOrientation, BothByteOrdersAndBrokenBlocks) {
  EXPECT_EQ(jpeg_exif_orientation(jpeg_with_tag(true, 0x0112, 3, 6)), 6);
  EXPECT_EQ(jpeg_exif_orientation(jpeg_with_tag(false, 0x0112, 3, 8)), 8);
  EXPECT_EQ(jpeg_exif_orientation(jpeg_with_tag(true, 0x0110, 3, 6)), 1);  // another tag
  EXPECT_EQ(jpeg_exif_orientation(jpeg_with_tag(true, 0x0112, 3, 9)), 1);  // not an orientation
  const std::string whole = jpeg_with_tag(true, 0x0112, 3, 6);
  for (size_t cut = 0; cut < whole.size(); ++cut)  // every truncation reads within the bytes and says upright
    EXPECT_EQ(jpeg_exif_orientation(whole.substr(0, cut)), cut >= whole.size() - 2 ? 6 : 1) << cut;
  EXPECT_EQ(jpeg_exif_orientation("not a jpeg"), 1);
}

Rgba8Image numbered(int width, int height) {  // pixel (x, y) has red = 10 * y + x
  Rgba8Image image;
  image.width = width, image.height = height;
  image.pixels.assign(static_cast<size_t>(width) * height * 4, 255);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) image.pixels[(y * width + x) * 4] = static_cast<uint8_t>(10 * y + x);
  return image;
}

std::vector<int> reds(const Rgba8Image& image) {
  std::vector<int> out;
  for (size_t p = 0; p < image.pixels.size(); p += 4) out.push_back(image.pixels[p]);
  return out;
}

TEST(ExifOrientation, TurnsAsViewersShowIt) {
  const Rgba8Image image = numbered(3, 2);  // rows: 0 1 2 / 10 11 12
  EXPECT_EQ(reds(apply_exif_orientation(image, 1)), (std::vector<int>{0, 1, 2, 10, 11, 12}));
  EXPECT_EQ(reds(apply_exif_orientation(image, 2)), (std::vector<int>{2, 1, 0, 12, 11, 10}));
  EXPECT_EQ(reds(apply_exif_orientation(image, 3)), (std::vector<int>{12, 11, 10, 2, 1, 0}));
  EXPECT_EQ(reds(apply_exif_orientation(image, 4)), (std::vector<int>{10, 11, 12, 0, 1, 2}));
  const Rgba8Image turned = apply_exif_orientation(image, 6);  // 90 degrees clockwise: 2 wide, 3 high
  EXPECT_EQ(turned.width, 2);
  EXPECT_EQ(turned.height, 3);
  EXPECT_EQ(reds(turned), (std::vector<int>{10, 0, 11, 1, 12, 2}));
  EXPECT_EQ(reds(apply_exif_orientation(image, 8)), (std::vector<int>{2, 12, 1, 11, 0, 10}));
  EXPECT_EQ(reds(apply_exif_orientation(image, 5)), (std::vector<int>{0, 10, 1, 11, 2, 12}));
  EXPECT_EQ(reds(apply_exif_orientation(image, 7)), (std::vector<int>{12, 2, 11, 1, 10, 0}));
}

TEST(Shrink, AreaAverage) {
  const Rgba8Image image = numbered(4, 2);  // 0 1 2 3 / 10 11 12 13
  const Rgba8Image half = shrink_to_long_side(image, 2);
  ASSERT_EQ(half.width, 2);
  ASSERT_EQ(half.height, 1);
  EXPECT_EQ(reds(half), (std::vector<int>{6, 8}));  // (0+1+10+11)/4 = 5.5 -> 6, (2+3+12+13)/4 = 7.5 -> 8
  Rgba8Image row = numbered(4, 1);
  for (int x = 0; x < 4; ++x) row.pixels[x * 4] = static_cast<uint8_t>(40 * x);  // 0 40 80 120
  // Each output pixel covers 4/3 pixels: 0 * 3/4 + 40 / 4 = 10; (40 + 80) / 2 = 60; 80 / 4 + 120 * 3/4 = 110.
  EXPECT_EQ(reds(shrink_to_long_side(row, 3)), (std::vector<int>{10, 60, 110}));
  EXPECT_EQ(reds(shrink_to_long_side(image, 8)), reds(image));  // small enough: unchanged
}

TEST(Sharpness, VarianceOfTheLaplacian) {
  Rgba8Image flat = numbered(6, 6);
  for (size_t p = 0; p < flat.pixels.size(); ++p) flat.pixels[p] = 100;
  EXPECT_EQ(laplacian_variance(flat), 0.0);
  Rgba8Image checker = flat;  // grey 0 / 255 alternating: the Laplacian is +-4*255 inside
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 6; ++x)
      for (int c = 0; c < 3; ++c) checker.pixels[(y * 6 + x) * 4 + c] = (x + y) % 2 ? 255 : 0;
  EXPECT_NEAR(laplacian_variance(checker), 1020.0 * 1020.0, 1e-3 * 1020 * 1020);
}

}  // namespace
}  // namespace lact
