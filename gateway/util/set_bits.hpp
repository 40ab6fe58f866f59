// The set bits of a 64-bit word, for the hot path. The baseline x86-64 build has no POPCNT instruction, and a
// flag that gave it one would make the build's flags differ from every earlier commit's, which `itchbench
// compare` refuses to compare; so the instruction is used where the CPU says it has it (every x86-64 CPU since
// 2008), asked once at start-up, behind a branch that is always taken the same way. Elsewhere the bits are
// counted inline: GCC's library call for __builtin_popcountll spilled the caller's registers around it.
#pragma once
#include <cstdint>

namespace itchbench {

#if defined(__x86_64__) && !defined(__POPCNT__)
// Read before its initialisation (another static initialiser's call), it is false: the portable count, as right.
inline const bool kCpuHasPopcnt = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("popcnt") != 0;
}();
#endif

// Without the instruction: bits summed in pairs, nibbles and bytes, the bytes added by a multiply.
inline uint32_t set_bits_portable(uint64_t x) {
  x -= (x >> 1) & 0x5555555555555555u;
  x = (x & 0x3333333333333333u) + ((x >> 2) & 0x3333333333333333u);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fu;
  return uint32_t((x * 0x0101010101010101u) >> 56);
}

inline uint32_t set_bits(uint64_t x) {
#if defined(__POPCNT__)
  return uint32_t(__builtin_popcountll(x));
#else
#if defined(__x86_64__)
  if (__builtin_expect(kCpuHasPopcnt, 1)) {
    uint64_t n;
    // Its destination zeroed first: some Intel cores wait for a POPCNT's destination's last value.
    asm("xorl %k0, %k0\n\tpopcntq %1, %0" : "=&r"(n) : "r"(x) : "cc");
    return uint32_t(n);
  }
#endif
  return set_bits_portable(x);
#endif
}

}  // namespace itchbench
