#include "fuzz/fuzz_input.hpp"

#include <cstdio>
#include <cstdlib>

namespace itchbench::fuzz {

void fail(const char* what, const char* detail) {
  std::fprintf(stderr, "FINDING: %s %s\n", what, detail);
  std::abort();
}

}  // namespace itchbench::fuzz
