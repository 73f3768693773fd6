// When lact serve cuts a response's write (serve/write_progress.h): never while acknowledged bytes keep coming,
// after the idle timeout with none, and when fewer than the floor came in a window of ten timeouts. Times and
// byte counts are worked out by hand; the count of unacknowledged bytes is checked on a real loopback TCP pair.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "serve/write_progress.h"

namespace lact::serve {
namespace {

using std::chrono::milliseconds;
using Clock = WriteProgress::Clock;

const Clock::time_point t0{};
const Clock::duration idle = milliseconds(1000);

TEST(WriteProgress, ChecksFourTimesAnIdleTimeout) {
  EXPECT_EQ(WriteProgress(idle, t0).tick(), milliseconds(250));
  EXPECT_EQ(WriteProgress(std::chrono::microseconds(2), t0).tick(), milliseconds(1));  // never busier
}

TEST(WriteProgress, StalledOnlyAfterAnIdleTimeoutWithNoNewByte) {
  WriteProgress progress(idle, t0);
  EXPECT_EQ(progress.check(0, t0 + milliseconds(999)), WriteVerdict::moving);
  EXPECT_EQ(progress.check(1, t0 + milliseconds(999)), WriteVerdict::moving);  // one byte: 1000 ms more
  EXPECT_EQ(progress.check(1, t0 + milliseconds(1998)), WriteVerdict::moving);
  EXPECT_EQ(progress.check(1, t0 + milliseconds(1999)), WriteVerdict::stalled);
}

TEST(WriteProgress, NeverStalledOnTheFirstCheckAfterSilence) {
  WriteProgress progress(idle, t0);
  EXPECT_EQ(progress.check(0, t0 + milliseconds(1000)), WriteVerdict::stalled);
  WriteProgress other(idle, t0);  // the same silence, but a byte came by the check: moving
  EXPECT_EQ(other.check(5, t0 + milliseconds(1000)), WriteVerdict::moving);
}

// A client taking a few bytes just before each timeout: never stalled, but under the floor (300 KiB in 10 s
// here), so cut at the end of its first window, at 10 s.
TEST(WriteProgress, ATrickleUnderTheFloorIsCutAtTheWindowsEnd) {
  WriteProgress progress(idle, t0);
  std::uint64_t acknowledged = 0;
  for (int ms = 900; ms < 10000; ms += 900)
    EXPECT_EQ(progress.check(acknowledged += 1000, t0 + milliseconds(ms)), WriteVerdict::moving) << ms;
  EXPECT_EQ(progress.check(acknowledged += 1000, t0 + milliseconds(10000)), WriteVerdict::too_slow);
}

// At the floor exactly in each window: 300 KiB in the first 10 s, 300 KiB more by 20 s; one byte short in the third.
TEST(WriteProgress, TheFloorIsCountedAgainInEachWindow) {
  WriteProgress progress(idle, t0);
  std::uint64_t acknowledged = 0;
  for (int window = 0; window < 3; ++window) {
    for (int ms = 500; ms < 10000; ms += 500) {
      acknowledged += kFloorBytes / 20;
      EXPECT_EQ(progress.check(acknowledged, t0 + milliseconds(window * 10000 + ms)), WriteVerdict::moving);
    }
    acknowledged += kFloorBytes - kFloorBytes / 20 * 19 - (window == 2 ? 1 : 0);
    const WriteVerdict verdict = progress.check(acknowledged, t0 + milliseconds(window * 10000 + 10000));
    EXPECT_EQ(verdict, window == 2 ? WriteVerdict::too_slow : WriteVerdict::moving) << window;
  }
}

// A fast start does not pay for a slow end: each window is counted on its own.
TEST(WriteProgress, AFastFirstWindowDoesNotCoverASlowSecond) {
  WriteProgress progress(idle, t0);
  EXPECT_EQ(progress.check(100 * kFloorBytes, t0 + milliseconds(500)), WriteVerdict::moving);
  std::uint64_t acknowledged = 100 * kFloorBytes;
  for (int ms = 1000; ms <= 10000; ms += 500)
    EXPECT_EQ(progress.check(acknowledged += 10, t0 + milliseconds(ms)), WriteVerdict::moving) << ms;
  for (int ms = 10500; ms < 20000; ms += 500)
    EXPECT_EQ(progress.check(acknowledged += 10, t0 + milliseconds(ms)), WriteVerdict::moving) << ms;
  EXPECT_EQ(progress.check(acknowledged += 10, t0 + milliseconds(20000)), WriteVerdict::too_slow);
}

// A loopback TCP pair: `a` (non-blocking) connected to `b` (reads wait at most 10 s).
struct LoopbackPair {
  LoopbackPair() {
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    EXPECT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), size), 0);
    EXPECT_EQ(::listen(listener, 1), 0);
    EXPECT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size), 0);
    a = ::socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_EQ(::connect(a, reinterpret_cast<sockaddr*>(&address), size), 0);
    b = ::accept(listener, nullptr, nullptr);
    ::close(listener);
    ::fcntl(a, F_SETFL, O_NONBLOCK);
    const timeval wait{10, 0};
    ::setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  }
  ~LoopbackPair() {
    ::close(a);
    ::close(b);
  }
  int a = -1, b = -1;
};

// What `a` wrote less what `b`'s kernel took: b reads nothing at first, so of 8 MiB sent (what a's buffer takes)
// some is not acknowledged; once b has read every byte, none is.
TEST(UnacknowledgedBytes, CountsWhatThePeerHasNotTakenOnLoopback) {
  LoopbackPair pair;
  const std::vector<char> bytes(8 << 20, 'x');
  const ssize_t written = ::send(pair.a, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  ASSERT_GT(written, 0);
  std::this_thread::sleep_for(milliseconds(50));
  const std::uint64_t held = unacknowledged_bytes(pair.a);
  EXPECT_GT(held, 0u);
  EXPECT_LT(held, static_cast<std::uint64_t>(written));  // b's kernel took the first bytes
  std::vector<char> sink(1 << 16);
  ssize_t read = 0;
  while (read < written) {
    const ssize_t n = ::recv(pair.b, sink.data(), sink.size(), 0);
    ASSERT_GT(n, 0) << read << " of " << written;
    read += n;
  }
  for (int tries = 0; tries < 1000 && unacknowledged_bytes(pair.a) > 0; ++tries)  // the last ACK on its way
    std::this_thread::sleep_for(milliseconds(1));
  EXPECT_EQ(unacknowledged_bytes(pair.a), 0u);
  EXPECT_EQ(unacknowledged_bytes(-1), 0u);  // not a socket: cannot tell
}

}  // namespace
}  // namespace lact::serve
