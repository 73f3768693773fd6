#include "core/path_parameters.h"

#include <cstdio>
#include <stdexcept>

namespace lact {

namespace {

// An interval with open or closed ends and a note after it ("degrees").
struct Interval {
  double low, high;
  bool low_closed, high_closed;
  const char* note;
};

Interval interval_of(const std::string& name, const PathParameters& p) {
  constexpr double kFar = 1e6;  // radii: lact path's bound since it was written, far beyond a normalised scene
  if (name == "hfov") return {0, 180, false, false, " degrees"};
  if (name == "elevation") return {-90, 90, false, false, " degrees"};
  if (name == "min_radius") return {0, kFar, false, false, ""};
  if (name == "max_radius") return {p.min_radius, kFar, true, false, " (not below the min radius)"};
  if (name == "radius") return {0, kFar, true, false, " (0: the cameras' distance)"};
  if (name == "smoothness") return {0, 1, true, true, ""};
  throw std::logic_error("path_parameter_range: no parameter " + name);
}

// A bound as a person writes it, the shorter of the plain and the exponent form: 180, 1.7, 1e6 (not 1000000, nor
// %g's 1e+06).
std::string bound_text(double v) {
  char plain[32], exponent_form[32];
  std::snprintf(plain, sizeof plain, "%.10g", v);
  std::snprintf(exponent_form, sizeof exponent_form, "%.9e", v);
  std::string s = exponent_form;
  const size_t e = s.find('e');
  std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
  mantissa.erase(mantissa.find_last_not_of('0') + 1);
  if (mantissa.back() == '.') mantissa.pop_back();
  const bool negative = exponent[0] == '-';
  exponent.erase(0, exponent.find_first_not_of("+-0"));
  const std::string shortest = mantissa + "e" + (negative ? "-" : "") + (exponent.empty() ? "0" : exponent);
  return shortest.size() < std::string(plain).size() ? shortest : plain;
}

bool inside(const Interval& r, double v) {  // false for NaN: every comparison with it is
  return (r.low_closed ? v >= r.low : v > r.low) && (r.high_closed ? v <= r.high : v < r.high);
}

}  // namespace

std::string path_parameter_range(const std::string& name, const PathParameters& p) {
  const Interval r = interval_of(name, p);
  return (r.low_closed ? "[" : "(") + bound_text(r.low) + ", " + bound_text(r.high) + (r.high_closed ? "]" : ")") +
         r.note;
}

std::string path_parameter_fault(const PathParameters& p) {
  for (const PathParameterField& field : kPathParameterFields)
    if (!inside(interval_of(field.name, p), p.*field.value)) return field.name;
  return "";
}

}  // namespace lact
