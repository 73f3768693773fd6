// A request header read by Beast's parser, as the rules see it (serve/request_rules.h). Header-only, so the HTTP
// session and the HTTP fuzzer (tests/fuzz/fuzz_http.cpp) read a header the same way.
#pragma once

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <string>

#include "serve/request_rules.h"

namespace lact::serve {

template <class Body>
RequestHead request_head(const boost::beast::http::request_parser<Body>& parser) {
  namespace http = boost::beast::http;
  const auto& request = parser.get();
  RequestHead head;
  head.method = std::string(request.method_string());
  head.target = std::string(request.target());
  head.host = std::string(request[http::field::host]);
  head.host_lines = request.count(http::field::host);
  head.http11 = request.version() >= 11;
  head.origin = std::string(request[http::field::origin]);
  head.authorization = std::string(request[http::field::authorization]);
  head.upgrade = boost::beast::websocket::is_upgrade(request);
  head.transfer_encoding = request.count(http::field::transfer_encoding) > 0 || parser.chunked();
  head.content_length = parser.content_length().value_or(0);
  return head;
}

// What a request Beast could not parse gets in its 400 (the connection then closes): a line naming the fault, or ""
// when `error` is no parse error (the client left, the time ran out: nothing to answer).
inline std::string malformed_request(const boost::beast::error_code& error) {
  namespace http = boost::beast::http;
  const int first = static_cast<int>(http::error::bad_line_ending), last = static_cast<int>(http::error::bad_obs_fold);
  if (error.category() != http::make_error_code(http::error::bad_method).category() || error.value() < first ||
      error.value() > last)
    return "";
  return "malformed HTTP request: " + error.message();
}

}  // namespace lact::serve
