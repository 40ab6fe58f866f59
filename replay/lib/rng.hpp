// Deterministic random numbers for generated sessions. xoshiro256** seeded by
// splitmix64, and only integer arithmetic in the distributions: std::
// distributions and libm functions may differ between library versions, and
// the same seed must give the same capture byte for byte on every machine.
#pragma once
#include <cstdint>

namespace itchbench::replay {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& w : s_) {
      seed += 0x9E3779B97F4A7C15ull;
      uint64_t z = seed;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      w = z ^ (z >> 31);
    }
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, n), n > 0, without modulo bias (Lemire's method).
  uint64_t below(uint64_t n) {
    unsigned __int128 m = (unsigned __int128)next() * n;
    uint64_t low = uint64_t(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = (unsigned __int128)next() * n;
        low = uint64_t(m);
      }
    }
    return uint64_t(m >> 64);
  }
  uint64_t between(uint64_t lo, uint64_t hi) { return lo + below(hi - lo + 1); }  // inclusive
  // True with probability ppm / 1,000,000.
  bool chance_ppm(uint32_t ppm) { return below(1000000) < ppm; }
  // Geometric with p = 1/2, capped: 0 half the time, 1 a quarter, ...
  unsigned geometric(unsigned cap) {
    const uint64_t r = next();
    const unsigned k = r == 0 ? 64 : unsigned(__builtin_ctzll(r));
    return k < cap ? k : cap;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace itchbench::replay
