// An HTTP response written in parts with the deadline set again before each part (serve/http_session.cpp).
// http::async_write runs the whole message under the one deadline set before it: a client downloading a large
// file over a slow link was cut off once the deadline passed, though its bytes kept moving. Here each part is
// one write to the socket, done as soon as the socket takes any bytes; so the deadline bounds the time during
// which nothing moves, and a client that reads nothing is still closed after `idle`. Only serve/'s .cpp files
// include this (it needs serve/network.h).
#pragma once

#include <memory>
#include <utility>

#include "serve/network.h"

namespace lact::serve {

// The response and its serializer, kept together until the last part is written (the serializer refers to it).
template <class Body>
struct MovingWrite {
  explicit MovingWrite(std::shared_ptr<http::response<Body>> response_)
      : response(std::move(response_)), serializer(*response) {}
  std::shared_ptr<http::response<Body>> response;
  http::response_serializer<Body> serializer;
};

template <class Body, class Done>
void write_next_part(beast::tcp_stream& stream, std::shared_ptr<MovingWrite<Body>> write,
                     std::chrono::steady_clock::duration idle, Done done) {
  stream.expires_after(idle);
  MovingWrite<Body>& parts = *write;
  http::async_write_some(
      stream, parts.serializer,
      [&stream, write = std::move(write), idle, done = std::move(done)](beast::error_code error, size_t) mutable {
        if (error || write->serializer.is_done()) return done(error);
        write_next_part(stream, std::move(write), idle, std::move(done));
      });
}

// Writes `response` on `stream`, then calls done(error). `stream` must outlive the write: `done` holds its owner.
template <class Body, class Done>
void write_while_moving(beast::tcp_stream& stream, std::shared_ptr<http::response<Body>> response,
                        std::chrono::steady_clock::duration idle, Done done) {
  write_next_part(stream, std::make_shared<MovingWrite<Body>>(std::move(response)), idle, std::move(done));
}

}  // namespace lact::serve
