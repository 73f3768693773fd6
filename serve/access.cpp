#include "serve/access.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <random>

namespace lact::serve {

std::string generate_token() {
  std::random_device random;
  std::string out;
  for (int i = 0; i < 4; ++i) {
    char part[9];
    std::snprintf(part, sizeof(part), "%08x", static_cast<unsigned>(random()));
    out += part;
  }
  return out;
}

bool same_token(const std::string& given, const std::string& expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ expected[i % std::max<size_t>(expected.size(), 1)]);
  return diff == 0 && !expected.empty();
}

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX and '+' decoded; ok = false (and nothing) on a bad escape.
std::string percent_decode(const std::string& text, bool& ok) {
  std::string out;
  ok = true;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%') {
      const int high = i + 1 < text.size() ? hex_value(text[i + 1]) : -1;
      const int low = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
      if (high < 0 || low < 0) {
        ok = false;
        return {};
      }
      out += static_cast<char>(high * 16 + low);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

Target parse_target(const std::string& target) {
  Target out;
  const size_t question = target.find('?');
  out.path = target.substr(0, question);
  if (question == std::string::npos) return out;
  const std::string query = target.substr(question + 1);
  size_t begin = 0;
  while (begin <= query.size()) {
    size_t end = query.find('&', begin);
    if (end == std::string::npos) end = query.size();
    const std::string pair = query.substr(begin, end - begin);
    const size_t equals = pair.find('=');
    bool ok_name = true, ok_value = true;
    const std::string name = percent_decode(pair.substr(0, equals), ok_name);
    const std::string value = equals == std::string::npos ? "" : percent_decode(pair.substr(equals + 1), ok_value);
    if (ok_name && ok_value && !name.empty()) out.query[name] = value;
    begin = end + 1;
  }
  return out;
}

std::string request_token(const Target& target, const std::string& authorization) {
  const auto found = target.query.find("token");
  if (found != target.query.end()) return found->second;
  for (const char* scheme : {"token ", "Bearer "})
    if (authorization.rfind(scheme, 0) == 0) return authorization.substr(std::string(scheme).size());
  return {};
}

bool origin_allowed(const std::string& origin, const std::string& host) {
  if (origin.empty()) return true;
  std::string lower_origin = origin, lower_host = host;
  for (std::string* s : {&lower_origin, &lower_host})
    std::transform(s->begin(), s->end(), s->begin(), [](unsigned char c) { return std::tolower(c); });
  return !lower_host.empty() && (lower_origin == "http://" + lower_host || lower_origin == "https://" + lower_host);
}

bool is_loopback(const std::string& address) {
  return address == "localhost" || address == "::1" || address == "[::1]" || address.rfind("127.", 0) == 0;
}

RateLimit::RateLimit(double rate, double burst_seconds)
    : rate_(rate), capacity_(std::max(1.0, rate * burst_seconds)), tokens_(capacity_) {}

bool RateLimit::allow(double now) {
  if (last_ >= 0) tokens_ = std::min(capacity_, tokens_ + (now - last_) * rate_);
  last_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

}  // namespace lact::serve
