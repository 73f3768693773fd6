// Scripted mode (tests, benchmarks, documentation screenshots): once the first novel view is shown, an
// optional measured orbit (--orbit-frames N: N UI frames, one new camera each, 360 degrees unless --orbit-degrees),
// then --frames N frames, then waiting until the view on screen is the latest camera's (and measured when snapped),
// then an optional screenshot, then the end (the viewer exits with --exit).
#pragma once

#include "viewer/options.h"
#include "viewer/session_parts.h"

namespace lact::viewer {

class Script {
 public:
  explicit Script(const ViewerOptions& options);

  bool active() const { return phase_ != Phase::Done; }
  bool drives_camera() const { return phase_ == Phase::Orbit; }
  bool orbited() const { return orbited_; }

  enum class Step { Run, Capture, Finish };
  // Once per frame, before the frame's render request. `shown`: a novel view is on screen; `current`: it is the
  // latest camera's and nothing is pending. Finish comes once.
  Step step(CameraController& camera, FrameStats& stats, double now, bool shown, bool current);

 private:
  enum class Phase { WaitFirst, Orbit, Hold, Settle, Capture, Done };
  Phase phase_ = Phase::WaitFirst;
  int orbit_frames_, hold_frames_;
  double orbit_radians_;
  bool capture_;
  int count_ = 0;
  bool orbited_ = false;
  double settle_start_ = 0;
};

}  // namespace lact::viewer
