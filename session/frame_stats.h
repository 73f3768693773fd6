// The viewer's performance counters: moving averages over the last second (what the panel shows) and totals
// over a measured interval (what --print-stats reports for a scripted orbit). Times in seconds, no clock
// inside: callers pass `now`.
#pragma once

#include <deque>
#include <utility>

namespace lact::session {

// The mean of the values added during the last `window` seconds.
class MovingAverage {
 public:
  explicit MovingAverage(double window = 1.0) : window_(window) {}
  void add(double now, double value);
  double mean(double now);  // 0 when empty
 private:
  void expire(double now);
  double window_;
  std::deque<std::pair<double, double>> samples_;
  double sum_ = 0;
};

// Events per second over the last `window` seconds (over the time since the first event while shorter).
class RateMeter {
 public:
  explicit RateMeter(double window = 1.0) : window_(window) {}
  void tick(double now);
  double per_second(double now);

 private:
  double window_;
  std::deque<double> ticks_;
  double first_ = -1;
};

// Counts and sums from a start time: frames, novel views, and the time spent in each.
struct IntervalTotals {
  double start = 0, end = 0;
  long frames = 0, views = 0;
  double frame_seconds = 0;                     // UI thread: time in the frame loop body (excluding waiting for events)
  double render_seconds = 0;                    // render thread: Model::render time of the views received
  int smallest_width = 0, smallest_height = 0;  // the smallest view received (adaptive resolution)

  double seconds() const { return end - start; }
  double frames_per_second() const { return seconds() > 0 ? frames / seconds() : 0; }
  double views_per_second() const { return seconds() > 0 ? views / seconds() : 0; }
  double mean_frame_ms() const { return frames ? 1000 * frame_seconds / frames : 0; }
  double mean_render_ms() const { return views ? 1000 * render_seconds / views : 0; }
  // Fraction of the interval the render thread spent rendering (near 1: the render limits the view rate).
  double render_busy() const { return seconds() > 0 ? render_seconds / seconds() : 0; }
};

// Everything the performance panel shows.
class FrameStats {
 public:
  void frame(double now, double work_seconds);  // a UI frame ended; `work_seconds` of it was work
  // A new novel view of width x height arrived from the render thread.
  void view(double now, double render_seconds, int width = 0, int height = 0);
  void upload(double now, double seconds);  // texture upload time on the UI thread

  double fps(double now) { return frames_.per_second(now); }
  double views_per_second(double now) { return views_.per_second(now); }
  double frame_ms(double now) { return 1000 * frame_work_.mean(now); }
  double render_ms(double now) { return 1000 * render_.mean(now); }
  double upload_ms(double now) { return 1000 * upload_.mean(now); }
  double last_render_ms() const { return last_render_ms_; }

  // Totals from `begin_interval` until `end_interval`.
  void begin_interval(double now);
  const IntervalTotals& end_interval(double now);
  const IntervalTotals& interval() const { return interval_; }
  bool measuring() const { return measuring_; }

 private:
  RateMeter frames_, views_;
  MovingAverage frame_work_, render_, upload_;
  double last_render_ms_ = 0;
  bool measuring_ = false;
  IntervalTotals interval_;
};

}  // namespace lact::session
