#include "session/frame_stats.h"

#include <algorithm>

namespace lact::session {

void MovingAverage::expire(double now) {
  while (!samples_.empty() && samples_.front().first <= now - window_) {
    sum_ -= samples_.front().second;
    samples_.pop_front();
  }
  if (samples_.empty()) sum_ = 0;  // no drift from repeated add/subtract
}

void MovingAverage::add(double now, double value) {
  expire(now);
  samples_.emplace_back(now, value);
  sum_ += value;
}

double MovingAverage::mean(double now) {
  expire(now);
  return samples_.empty() ? 0 : sum_ / samples_.size();
}

void RateMeter::tick(double now) {
  if (first_ < 0) first_ = now;
  ticks_.push_back(now);
}

double RateMeter::per_second(double now) {
  while (!ticks_.empty() && ticks_.front() <= now - window_) ticks_.pop_front();
  if (first_ < 0) return 0;
  const double span = std::min(window_, now - first_);
  return span > 0 ? ticks_.size() / span : 0;
}

void FrameStats::frame(double now, double work_seconds) {
  frames_.tick(now);
  frame_work_.add(now, work_seconds);
  if (measuring_) {
    ++interval_.frames;
    interval_.frame_seconds += work_seconds;
  }
}

void FrameStats::view(double now, double render_seconds, int width, int height) {
  views_.tick(now);
  render_.add(now, render_seconds);
  last_render_ms_ = 1000 * render_seconds;
  if (measuring_) {
    ++interval_.views;
    interval_.render_seconds += render_seconds;
    if (interval_.smallest_width == 0 ||
        static_cast<long>(width) * height < static_cast<long>(interval_.smallest_width) * interval_.smallest_height) {
      interval_.smallest_width = width;
      interval_.smallest_height = height;
    }
  }
}

void FrameStats::upload(double now, double seconds) { upload_.add(now, seconds); }

void FrameStats::begin_interval(double now) {
  interval_ = IntervalTotals{};
  interval_.start = now;
  measuring_ = true;
}

const IntervalTotals& FrameStats::end_interval(double now) {
  interval_.end = now;
  measuring_ = false;
  return interval_;
}

}  // namespace lact::session
