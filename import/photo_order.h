// The order of a capture's photos. COLMAP's sequential matcher and lact's views take the photos in name order
// (byte order), which is the capture order only when the numbers in the names are zero-padded: `shot 10.jpg`
// sorts before `shot 2.jpg`. Natural order compares runs of digits by their value.
#pragma once

#include <string>
#include <vector>

namespace lact {

// Whether `a` comes before `b` in natural order: runs of digits compared by value, the rest byte by byte; names
// equal so ("a01", "a1") are in byte order.
bool natural_less(const std::string& a, const std::string& b);

// A warning when the natural order of `names` (sorted by name) differs from their name order, naming the first
// two names out of order and what to do; "" when the orders agree.
std::string name_order_warning(const std::vector<std::string>& names);

}  // namespace lact
