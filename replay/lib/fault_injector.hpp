// Deterministic, seeded faults on the MoldUDP64 packets of a capture (see
// docs/faults.md). Faults act on whole packets, at most one per packet:
//   drop       the packet appears nowhere in the output
//   duplicate  it appears twice, the copy right after it
//   reorder    it moves later by 1..window packets (counted only when it
//              then really arrives after a packet with a higher sequence)
//   truncate   its UDP payload is cut short, so MoldUDP64 validation rejects it
//   corrupt    one of its messages is damaged: half the time the type byte
//              becomes a digit (rejected as an unknown type), half the time one
//              bit of the body flips (still decodes: reported as such)
// Besides the draw, messages named by sequence number are damaged so that they
// are rejected (their type byte a digit), counted as corrupted and rejected.
// The first MoldUDP64 packet and end-of-session packets are never faulted and
// nothing moves past an end of session, so every loss lies between packets
// the gateway sees. Frames that are not MoldUDP64 over UDP pass unchanged.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace itchbench::replay {

struct FaultOptions {
  uint64_t seed = 1;
  uint32_t drop_ppm = 0, duplicate_ppm = 0, reorder_ppm = 0, truncate_ppm = 0, corrupt_ppm = 0;
  uint32_t reorder_window = 4;      // 1..64 (the gateway remembers 64 gaps)
  uint32_t burst_length = 0;        // --burst-drop LEN@P: LEN packets in a row ...
  uint32_t burst_ppm = 0;           // ... starting at a packet with probability P
  // Messages to damage so that a gateway rejects them (type byte a digit), ascending: a serial line's corrupted
  // lines, as its sender logged them (not drawn; any packet, the first too).
  std::vector<uint64_t> reject_sequences;
};

struct FaultReport {
  uint64_t packets_in = 0, packets_out = 0, messages_in = 0, passed_unparsed = 0;
  uint64_t dropped_packets = 0, dropped_messages = 0;
  uint64_t duplicated_packets = 0, duplicated_messages = 0;
  uint64_t reordered_packets = 0, reordered_messages = 0;
  uint64_t truncated_packets = 0, truncated_messages = 0;
  uint64_t corrupted_packets = 0, corrupted_messages_rejected = 0, corrupted_messages_decoded = 0;
  // Sequence numbers of the messages each fault touched, ascending.
  std::vector<uint64_t> dropped_sequences, duplicated_sequences, reordered_sequences, truncated_sequences,
      corrupted_rejected_sequences, corrupted_decoded_sequences;
};

// Reads in (pcap/pcapng), writes out (pcap, Ethernet) atomically. Throws
// std::runtime_error with a message for a user.
FaultReport inject_faults(const std::string& in, const std::string& out, const FaultOptions& options);

// The sidecar: integer counts and the affected sequence numbers, as JSON.
std::string fault_report_json(const FaultReport& r, const FaultOptions& options);

}  // namespace itchbench::replay
