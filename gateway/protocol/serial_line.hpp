// ITCH over a serial line: the line codec of SERIAL_LINE.md.
#pragma once
#include <cstddef>
#include <cstdint>

namespace itchbench::serial {

constexpr size_t kMaxLine = 200;
constexpr size_t kMaxPayload = 64;

// Writes one line for msg into out (capacity >= kMaxLine); returns its length.
// msg == nullptr writes the end-of-session line.
size_t encode_line(uint8_t* out, uint64_t seq, uint64_t t_send, const uint8_t* msg, size_t len);

struct LineCounters {
  uint64_t lines = 0;            // good message lines
  uint64_t end_of_session = 0;
  uint64_t garbage_bytes = 0;    // bytes outside any line
  uint64_t bad_checksum = 0;
  uint64_t malformed = 0;        // a field that does not parse
  uint64_t overlong = 0;         // no line end within kMaxLine bytes
  uint64_t bytes = 0;
  uint64_t rejected_lines() const { return bad_checksum + malformed + overlong; }
};

// Incremental reader: feed it bytes as they arrive, in any pieces.
// No allocation; a partial line waits in a fixed buffer.
class LineReader {
 public:
  // on_line(seq, t_send, msg, len) per good message line; on_end(seq) at the
  // end-of-session line, whose seq is the next one expected (like a
  // MoldUDP64 heartbeat, it reveals a gap at the tail).
  template <class OnLine, class OnEnd>
  void feed(const uint8_t* data, size_t n, OnLine&& on_line, OnEnd&& on_end) {
    counters_.bytes += n;
    for (size_t i = 0; i < n; ++i) {
      const uint8_t c = data[i];
      if (state_ == State::kIdle) {
        if (c == '$') {
          state_ = State::kInLine;
          used_ = 0;
        } else if (c != '\n' && c != '\r') {
          ++counters_.garbage_bytes;
        }
        continue;
      }
      if (state_ == State::kSkipping) {
        if (c == '\n') state_ = State::kIdle;
        continue;
      }
      if (c == '\n') {
        state_ = State::kIdle;
        finish(on_line, on_end);
        continue;
      }
      if (used_ == sizeof line_) {
        ++counters_.overlong;
        state_ = State::kSkipping;
        continue;
      }
      line_[used_++] = c;
    }
  }
  const LineCounters& counters() const { return counters_; }

 private:
  enum class State { kIdle, kInLine, kSkipping };
  enum class Parsed { kMessage, kEnd, kBadChecksum, kMalformed };
  Parsed parse(uint64_t& seq, uint64_t& t_send, size_t& len);

  template <class OnLine, class OnEnd>
  void finish(OnLine& on_line, OnEnd& on_end) {
    uint64_t seq = 0, t_send = 0;
    size_t len = 0;
    switch (parse(seq, t_send, len)) {
      case Parsed::kMessage:
        ++counters_.lines;
        on_line(seq, t_send, payload_, len);
        break;
      case Parsed::kEnd:
        ++counters_.end_of_session;
        on_end(seq);
        break;
      case Parsed::kBadChecksum: ++counters_.bad_checksum; break;
      case Parsed::kMalformed: ++counters_.malformed; break;
    }
  }

  State state_ = State::kIdle;
  uint8_t line_[kMaxLine];  // bytes after '$', before '\n'
  size_t used_ = 0;
  uint8_t payload_[kMaxPayload];
  LineCounters counters_;
};

}  // namespace itchbench::serial
