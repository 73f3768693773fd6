// import/frame_times: the times ffmpeg reports for the frames it hands over (its framecrc text, hand-written
// here with the time bases a Matroska, an MP4 and a NUT file give), and frames.json and the summary's span line
// built from them, a frame without a time included.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "import/frame_times.h"

namespace lact {
namespace {

TEST(FrameTimes, ReadsEachFramesTimestampInItsTimeBase) {
  const std::string text =
      "#software: Lavf59.27.100\n#tb 0: 1/12800\n#media_type 0: video\n#codec_id 0: wrapped_avframe\n"
      "#dimensions 0: 64x48\n#sar 0: 0/1\n"
      "0,       5888,       6400,      512,      472, 0x53880a15\n"            // decoded before shown
      "0,      -1024,      -1024,      512,      472, 0x1dec0966\r\n"          // before the start, and a CRLF line
      "0, -9223372036854775808, -9223372036854775808, 512, 472, 0xb2e309b5\n"  // ffmpeg's "no timestamp"
      "0,      99, 12x, 0, 0, 0\n"                                             // not a number
      "1,      12800,      12800,      512,      472, 0x0\n"                   // another stream: not a frame of ours
      "0\n";                                                                   // no pts field
  const std::vector<double> seconds = framecrc_seconds(text);
  ASSERT_EQ(seconds.size(), 5u);
  EXPECT_EQ(seconds[0], 0.5);
  EXPECT_EQ(seconds[1], -0.08);
  EXPECT_TRUE(std::isnan(seconds[2]));
  EXPECT_TRUE(std::isnan(seconds[3]));
  EXPECT_TRUE(std::isnan(seconds[4]));
  // NUT's 1/49152 for 24 per second: frame 5 at 10240 ticks is 5/24's double (one rounding; 10240 x (1/49152)
  // is not).
  EXPECT_EQ(framecrc_seconds("#tb 0: 1/49152\n0, 10240, 10240, 2048, 472, 0x0\n"), std::vector<double>{5.0 / 24});
  EXPECT_EQ(framecrc_seconds("#tb 0: 1/1000\n0, 427, 427, 42, 472, 0x0\n"), std::vector<double>{0.427});
  // A frame before any time base, a time base of 0 or of garbage, and text that is not framecrc at all.
  for (const std::string bad : {"0, 1, 1, 1, 1, 0\n", "#tb 0: 0/1000\n0, 1, 1, 1, 1, 0\n",
                                "#tb 0: 1/x\n0, 1, 1, 1, 1, 0\n", "#tb 0: 1/-5\n0, 1, 1, 1, 1, 0\n"}) {
    ASSERT_EQ(framecrc_seconds(bad).size(), 1u) << bad;
    EXPECT_TRUE(std::isnan(framecrc_seconds(bad)[0])) << bad;
  }
  EXPECT_TRUE(framecrc_seconds("").empty());
  const char binary[] = "\0\xff\n,,,\n-1, 2, 3\n";
  EXPECT_TRUE(framecrc_seconds(std::string(binary, sizeof binary - 1)).empty());
}

TEST(FrameTimes, FramesJsonAndSpanUseEachFramesOwnTime) {
  VideoFrames frames;
  frames.count = 40, frames.frame_rate = 24;  // a nominal rate the times below do not follow
  frames.frames = {2, 7, 12};
  frames.seconds = {0.092, 0.427, std::nan("")};
  const nlohmann::json doc = nlohmann::json::parse(frame_times_json(
      "v.mkv", frames, {"frame_00002.png", "notes.txt", "frame_00003.png", "frame_00001.png", "frame_00004.png"}));
  EXPECT_EQ(doc["frame_rate"], 24.0);
  EXPECT_EQ(doc["video_frames"], 40);
  ASSERT_EQ(doc["frames"].size(), 3u);  // the names of no written frame left out
  EXPECT_EQ(doc["frames"][0], (nlohmann::json{{"image", "frame_00002.png"}, {"frame", 7}, {"seconds", 0.427}}));
  EXPECT_EQ(doc["frames"][1], (nlohmann::json{{"image", "frame_00003.png"}, {"frame", 12}, {"seconds", nullptr}}));
  EXPECT_EQ(doc["frames"][2], (nlohmann::json{{"image", "frame_00001.png"}, {"frame", 2}, {"seconds", 0.092}}));
  EXPECT_EQ(frame_span_text("v.mkv", frames, {"frame_00002.png", "frame_00001.png"}),
            "frames 0.09 s to 0.43 s of v.mkv (video frames 2 to 7 of 40, 24 per second); each image's time in "
            "frames.json");
  EXPECT_EQ(frame_span_text("v.mkv", frames, {"frame_00001.png", "frame_00003.png"}),
            "frames of v.mkv: video frames 2 to 12 of 40 (their times unknown); each image's time in frames.json");
  frames.frame_rate = 0;
  EXPECT_EQ(frame_span_text("v%s.mkv", frames, {"frame_00001.png", "frame_00002.png"}),
            "frames 0.09 s to 0.43 s of v%s.mkv (video frames 2 to 7 of 40); each image's time in frames.json");
  EXPECT_EQ(frame_span_text("v.mkv", frames, {"notes.txt"}), "");
}

}  // namespace
}  // namespace lact
