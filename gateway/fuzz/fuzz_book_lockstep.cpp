// itch::decode plus the order book, in lockstep with the naive reference
// book: any difference in what a message changed, in a BBO event, or in the
// final state is a finding. Input: [u16 length][message] ...
#include <cstdint>

#include "fuzz/fuzz_input.hpp"
#include "lockstep_book.hpp"

using namespace itchbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  testing::LockstepBooks books(16);  // small, so the table grows and rehashes
  fuzz::for_each_piece(data, size, [&](const uint8_t* p, size_t n) {
    const std::string diff = books.apply(p, n);
    if (!diff.empty()) fuzz::fail("books differ:", diff.c_str());
  });
  const std::string diff = books.compare_state();
  if (!diff.empty()) fuzz::fail("final state differs:", diff.c_str());
  return 0;
}
