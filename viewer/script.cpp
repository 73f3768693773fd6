#include "viewer/script.h"

#include <cstdio>

namespace lact::viewer {

namespace {
constexpr double kPi = 3.14159265358979323846;
constexpr double kSettleTimeout = 300;  // seconds to wait for the last render
}  // namespace

Script::Script(const ViewerOptions& o)
    : orbit_frames_(o.orbit_frames),
      hold_frames_(o.frames),
      orbit_radians_(o.orbit_degrees * kPi / 180),
      capture_(!o.screenshot.empty()) {
  if (!o.scripted()) phase_ = Phase::Done;
}

Script::Step Script::step(CameraController& camera, FrameStats& stats, double now, bool shown, bool current) {
  switch (phase_) {
    case Phase::WaitFirst:
      if (!shown) return Step::Run;
      count_ = 0;
      if (orbit_frames_ > 0) {
        phase_ = Phase::Orbit;
        stats.begin_interval(now);
      } else {
        phase_ = Phase::Hold;
      }
      return step(camera, stats, now, shown, current);
    case Phase::Orbit:
      if (count_ < orbit_frames_) {
        camera.orbit(orbit_radians_ / orbit_frames_, 0);
        ++count_;
        return Step::Run;
      }
      stats.end_interval(now);
      orbited_ = true;
      phase_ = Phase::Hold;
      count_ = 0;
      return step(camera, stats, now, shown, current);
    case Phase::Hold:
      if (count_++ < hold_frames_) return Step::Run;
      phase_ = Phase::Settle;
      settle_start_ = now;
      return step(camera, stats, now, shown, current);
    case Phase::Settle:
      if (!current && now - settle_start_ < kSettleTimeout) return Step::Run;
      if (!current) std::fprintf(stderr, "lact view: the last render did not arrive in %.0f s\n", kSettleTimeout);
      if (capture_) {
        phase_ = Phase::Capture;
        return Step::Capture;
      }
      phase_ = Phase::Done;
      return Step::Finish;
    case Phase::Capture:
      phase_ = Phase::Done;
      return Step::Finish;
    case Phase::Done:
      break;
  }
  return Step::Run;
}

}  // namespace lact::viewer
