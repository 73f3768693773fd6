// The numbers that shape a camera path (`lact path`'s flags, lact.camera_path's arguments) and their one range
// check, so both front ends refuse and take the same values and only word the line their own way.
#pragma once

#include <string>

namespace lact {

// Defaults: the official demo's turntable (hfov 50, radius 1.7-3.0, elevation 30); radius 0 is the cameras' mean
// distance (orbit), smoothness 0 a piecewise linear interpolation.
struct PathParameters {
  double hfov = 50, elevation = 30, min_radius = 1.7, max_radius = 3.0, radius = 0, smoothness = 0;
};

// Each parameter's name as lact.camera_path spells it (a flag is "--" with '-' for '_') and its field, in the order
// checked (min_radius before max_radius, whose range starts at it).
struct PathParameterField {
  const char* name;
  double PathParameters::*value;
};
inline constexpr PathParameterField kPathParameterFields[] = {{"hfov", &PathParameters::hfov},
                                                              {"elevation", &PathParameters::elevation},
                                                              {"min_radius", &PathParameters::min_radius},
                                                              {"max_radius", &PathParameters::max_radius},
                                                              {"radius", &PathParameters::radius},
                                                              {"smoothness", &PathParameters::smoothness}};

// The range `name` must lie in, as text: "(0, 180) degrees", "[1.7, 1e6) (not below the min radius)" (max_radius's
// starts at p.min_radius). Each keeps the cameras a path makes ones that render takes: hfov (0, 180) degrees,
// elevation (-90, 90) degrees (at +-90 the view is along the up axis), 0 < min_radius <= max_radius < 1e6, radius
// [0, 1e6) (0: the cameras' distance), smoothness [0, 1].
std::string path_parameter_range(const std::string& name, const PathParameters& p);

// The first parameter (in kPathParameterFields' order) outside its range, NaN included, or "" when none is.
std::string path_parameter_fault(const PathParameters& p);

}  // namespace lact
