// An HTTP response written in parts, cut only when its bytes stop moving (serve/http_session.cpp).
// http::async_write runs the whole message under the one deadline set before it: a client downloading a large
// file over a slow link was cut off once the deadline passed, though its bytes kept moving. A deadline set again
// before each part was not enough either: on loopback the socket holds megabytes and takes the next part only once
// about a third of them has left, which a reader under that third per timeout does not do in time. So the stream
// has no deadline here; a watch asks the socket every quarter of `idle` how many bytes the client has acknowledged
// and cuts the write when none came for `idle`, or when fewer than the floor came in a long window
// (serve/write_progress.h). Only serve/'s .cpp files include this (it needs serve/network.h).
#pragma once

#include <memory>
#include <utility>

#include "serve/network.h"
#include "serve/write_progress.h"

namespace lact::serve {

// One response's write: the response and its serializer (which refers to it), the watch and `done`, kept
// together until the last part is written and the watch has seen it end.
template <class Body, class Done>
struct MovingWrite {
  MovingWrite(beast::tcp_stream& stream_, std::shared_ptr<http::response<Body>> response_,
              std::chrono::steady_clock::duration idle, Done done_)
      : stream(stream_),
        response(std::move(response_)),
        serializer(*response),
        watch(stream_.get_executor()),
        progress(idle, std::chrono::steady_clock::now()),
        queued_before(unacknowledged_bytes(stream_.socket().native_handle())),
        done(std::move(done_)) {}

  // Bytes of this response the client's TCP has acknowledged: those queued before it (a previous response's
  // tail) and those the socket took, less what the socket still holds.
  std::uint64_t acknowledged() {
    const std::uint64_t sent = queued_before + taken, held = unacknowledged_bytes(stream.socket().native_handle());
    return sent > held ? sent - held : 0;
  }

  void finish(beast::error_code error) {
    finished = true;
    watch.cancel();
    Done last = std::move(done);  // it may end the session; this write lives on in the handler that runs it
    last(error);
  }

  beast::tcp_stream& stream;  // owned by the session that `done` holds
  std::shared_ptr<http::response<Body>> response;
  http::response_serializer<Body> serializer;
  asio::steady_timer watch;
  WriteProgress progress;
  std::uint64_t queued_before = 0, taken = 0;  // taken: bytes of this response the socket took
  bool finished = false, cut = false;
  Done done;
};

// Every tick, until the write ends: cuts it (its pending part ends with operation_aborted) when it stopped moving.
template <class Write>
void watch_write(std::shared_ptr<Write> write) {
  Write& w = *write;
  w.watch.expires_after(w.progress.tick());
  w.watch.async_wait([write = std::move(write)](beast::error_code error) mutable {
    if (error || write->finished) return;
    if (write->progress.check(write->acknowledged(), std::chrono::steady_clock::now()) == WriteVerdict::moving)
      return watch_write(std::move(write));
    write->cut = true;
    beast::error_code ignored;
    write->stream.socket().cancel(ignored);
  });
}

template <class Write>
void write_next_part(std::shared_ptr<Write> write) {
  Write& w = *write;
  http::async_write_some(w.stream, w.serializer, [write = std::move(write)](beast::error_code error, size_t n) mutable {
    write->taken += n;
    if (write->cut) error = beast::error::timeout;
    if (error || write->serializer.is_done()) return write->finish(error);
    write_next_part(std::move(write));
  });
}

// Writes `response` on `stream`, then calls done(error) (beast::error::timeout when it was cut). `stream` must
// outlive the write: `done` holds its owner. The stream's deadline is off afterwards: the next read sets its own.
template <class Body, class Done>
void write_while_moving(beast::tcp_stream& stream, std::shared_ptr<http::response<Body>> response,
                        std::chrono::steady_clock::duration idle, Done done) {
  auto write = std::make_shared<MovingWrite<Body, Done>>(stream, std::move(response), idle, std::move(done));
  stream.expires_never();  // the watch bounds the write instead
  watch_write(write);
  write_next_part(std::move(write));
}

}  // namespace lact::serve
