// A small deterministic random generator (SplitMix64). Results depend only on the seed, never on the standard
// library, the thread or the platform, so the same seed gives byte-identical renders everywhere.
#pragma once

#include <cmath>
#include <cstdint>

namespace ro {

// Mixes two 64-bit values into one seed (for "seed of object i", "seed of the views of object i", ...).
inline uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9E3779B97F4A7C15ull + b + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  float uniformf(float lo, float hi) { return static_cast<float>(uniform(lo, hi)); }
  // Uniform integer in [lo, hi] (inclusive).
  int integer(int lo, int hi) { return lo + static_cast<int>(next() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(double p) { return uniform() < p; }

 private:
  uint64_t state_;
};

}  // namespace ro
