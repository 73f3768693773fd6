#include "serve/write_progress.h"

#include <sys/ioctl.h>

#include <algorithm>
#if defined(__linux__)
#include <linux/sockios.h>
#endif

namespace lact::serve {

WriteProgress::WriteProgress(Clock::duration idle, Clock::time_point start)
    : idle_(idle), last_move_(start), window_start_(start) {}

WriteVerdict WriteProgress::check(std::uint64_t acknowledged, Clock::time_point now) {
  if (acknowledged > acknowledged_) {
    acknowledged_ = acknowledged;
    last_move_ = now;
  }
  if (now - last_move_ >= idle_) return WriteVerdict::stalled;
  if (now - window_start_ < kFloorWindowIdles * idle_) return WriteVerdict::moving;
  if (acknowledged_ - window_acknowledged_ < kFloorBytes) return WriteVerdict::too_slow;
  window_start_ = now;
  window_acknowledged_ = acknowledged_;
  return WriteVerdict::moving;
}

WriteProgress::Clock::duration WriteProgress::tick() const {
  return std::max<Clock::duration>(idle_ / 4, std::chrono::milliseconds(1));
}

std::uint64_t unacknowledged_bytes(int socket) {
#if defined(__linux__)
  int bytes = 0;
  if (::ioctl(socket, SIOCOUTQ, &bytes) == 0 && bytes > 0) return static_cast<std::uint64_t>(bytes);
#else
  (void)socket;
#endif
  return 0;
}

}  // namespace lact::serve
