#include "import/photo_order.h"

#include <algorithm>

namespace lact {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The run of digits of `s` at `at`: its value's digits (leading zeros dropped) and its end.
std::string digit_run(const std::string& s, size_t& at) {
  const size_t begin = at;
  while (at < s.size() && is_digit(s[at])) ++at;
  const size_t first = std::min(s.find_first_not_of('0', begin), at);
  return s.substr(first, at - first);
}

// -1, 0 or 1 as `a` comes before, with or after `b` in natural order, ties not broken.
int natural_compare(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      const std::string x = digit_run(a, i), y = digit_run(b, j);
      if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
      if (x != y) return x < y ? -1 : 1;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]) ? -1 : 1;
    ++i, ++j;
  }
  return i < a.size() ? 1 : j < b.size() ? -1 : 0;
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  const int c = natural_compare(a, b);
  return c != 0 ? c < 0 : a < b;
}

std::string name_order_warning(const std::vector<std::string>& names) {
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    const std::string &first = names[i], &second = names[i + 1];
    if (!natural_less(second, first)) continue;
    return "'" + first + "' sorts before '" + second +
           "' by name though its number is higher: COLMAP's sequential matching and the scene's views take the "
           "photos in name order; if the numbers give the capture order, rename the photos with zero-padded "
           "numbers (shot 002.jpg, shot 010.jpg) and import again";
  }
  return "";
}

}  // namespace lact
