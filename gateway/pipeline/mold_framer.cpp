#include "pipeline/mold_framer.hpp"

namespace itchbench {

void MoldFramer::count_rejection(mold::ParseStatus st) {
  switch (st) {
    case mold::ParseStatus::kTooShort: ++counters_.rejected_too_short; break;
    case mold::ParseStatus::kLengthOverrun: ++counters_.rejected_length_overrun; break;
    case mold::ParseStatus::kCountMismatch: ++counters_.rejected_count_mismatch; break;
    case mold::ParseStatus::kSequenceOverflow: ++counters_.rejected_sequence_overflow; break;
    case mold::ParseStatus::kOk: break;
  }
}

}  // namespace itchbench
