// When a response's write is cut (serve/write_while_moving.h): only when its bytes stop moving, or when they move
// slower than a floor. Socket-free, so tests/unit/serve/test_write_progress.cpp drives it with a hand-made clock.
//
// "Moving" counts the bytes the client's TCP acknowledged, not the bytes the socket took: a socket on loopback
// holds megabytes and is writable again only once about a third of them has left, so a reader slower than that
// third per idle timeout missed a per-part deadline while its bytes flowed (docs/guide/serve.md).
#pragma once

#include <chrono>
#include <cstdint>

namespace lact::serve {

// The floor on a write's average rate: at least kFloorBytes acknowledged in each window of kFloorWindowIdles idle
// timeouts (with the 30 s default: 300 KiB in 5 minutes, 1 KiB/s). It bounds a client that takes a few bytes
// just before each idle timeout: without it one byte every 29 s would hold a connection for ever.
constexpr int kFloorWindowIdles = 10;
constexpr std::uint64_t kFloorBytes = 300 * 1024;

enum class WriteVerdict { moving, stalled, too_slow };

class WriteProgress {
 public:
  using Clock = std::chrono::steady_clock;

  // `idle`: the longest time with no byte acknowledged; the write starts at `start`.
  WriteProgress(Clock::duration idle, Clock::time_point start);

  // `acknowledged`: the bytes of this write the client has acknowledged so far, at `now`. stalled: none for `idle`;
  // too_slow: fewer than kFloorBytes in the window that ended; else moving.
  WriteVerdict check(std::uint64_t acknowledged, Clock::time_point now);

  // How often check() is called: a stalled write is cut between 1 and 1.25 idle timeouts after its last byte.
  Clock::duration tick() const;

 private:
  Clock::duration idle_;
  Clock::time_point last_move_, window_start_;
  std::uint64_t acknowledged_ = 0, window_acknowledged_ = 0;
};

// The bytes written to a TCP socket that its peer has not acknowledged yet (Linux's SIOCOUTQ); 0 where it cannot
// tell (then only the bytes the socket took count as moving).
std::uint64_t unacknowledged_bytes(int socket);

}  // namespace lact::serve
