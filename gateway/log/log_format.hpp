// Binary log formats written by the gateway (documented in FORMAT.md beside
// this file; the harness reads them with one numpy dtype per format).
// Little-endian, fixed-size records after a 128-byte header (latency: 160,
// the header and the stage clock's line).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace itchbench::logfmt {

constexpr char kMagic[8] = {'I', 'T', 'C', 'H', 'B', 'L', 'O', 'G'};
constexpr size_t kHeaderSize = 128;  // common to every kind; a latency log's header is longer (below)

enum class Kind : uint16_t {
  kLatency = 1,  // the gateway: one record per message
  kBbo = 2,      // the gateway: one record per BBO event
  kSend = 3,     // a sender (udp-replay, serial-replay): one record per packet or line sent
  kSubscriber = 4,  // a subscriber (TCP, shared memory): one record per BBO event received
  kRequest = 5,     // a MoldUDP64 re-request server: one record per request received and per answer packet sent
  kDepth = 6,       // the gateway with --levels: one LevelChangeRecord per level of a depth event
  kLatencyIndex = 7,  // the gateway, beside its latency log: one record per block of it (LatencyBlockRecord)
};

// Each kind is versioned on its own; readers keep reading the earlier versions.
// A latency log is written as version 5 (compact records, the default) or 4 (wide records, one u64 a stamp).
constexpr uint16_t kLatencyWideVersion = 4;
constexpr uint16_t kLatencyCompactVersion = 5;
// A depth log is written as version 3: level changes in 16-byte slots (LevelChangeSlot), N in the header. Version 2
// held a LevelChangeRecord a level change (the frame publishers still send), version 1 a whole top N a record.
constexpr uint16_t kDepthVersion = 3;
constexpr uint16_t kDepthLevelChangeRecordVersion = 2;
constexpr uint16_t version_of(Kind k) {
  return k == Kind::kLatency ? kLatencyCompactVersion : k == Kind::kDepth ? kDepthVersion : 1;
}

// Clock of the stage stamps (t_receive .. t_published).
enum class StageClock : uint16_t {
  kNone = 0,
  kMonotonic = 1,  // CLOCK_MONOTONIC, ns
  kTsc = 2,        // invariant TSC converted to ns (origin: CLOCK_MONOTONIC at calibration); latency v1-v3
  kTscTicks = 3,   // raw invariant TSC ticks, mapped to ns by the header's StageClockLine when read (latency v4)
};

// A latency log's stage clock as a line onto CLOCK_MONOTONIC, after the
// common header (latency version 4): a stamp t (raw TSC ticks) is
//   ns0 + ((t - tsc0) * ns_per_tick_q32 >> 32)   (exact, 128-bit product)
// nanoseconds; every stamp is 0 (not stamped) or at least tsc0. Writing raw
// ticks keeps the conversion off the hot path. All zero when the stamps are
// CLOCK_MONOTONIC ns already.
struct StageClockLine {
  uint64_t tsc0 = 0;             // ticks at the end of calibration
  uint64_t ns0 = 0;              // CLOCK_MONOTONIC then
  uint64_t ns_per_tick_q32 = 0;  // below 2^32: the TSC runs at 1 GHz or more
  uint64_t reserved = 0;
};
static_assert(sizeof(StageClockLine) == 32);
// A raw stamp on the line, in ns; a stamp before the line's origin maps to ns0.
inline uint64_t ns_on_line(const StageClockLine& line, uint64_t ticks) {
  const uint64_t dt = ticks > line.tsc0 ? ticks - line.tsc0 : 0;
  return line.ns0 + uint64_t((unsigned __int128)dt * line.ns_per_tick_q32 >> 32);
}
constexpr size_t kLatencyHeaderSize = kHeaderSize + sizeof(StageClockLine);
constexpr size_t header_size_of(Kind k) { return k == Kind::kLatency ? kLatencyHeaderSize : kHeaderSize; }
// Clock of t_origin.
enum class OriginClock : uint16_t {
  kNone = 0,
  kCaptureEpoch = 1,     // capture timestamp, ns since the Unix epoch (simulation)
  kSenderMonotonic = 2,  // sender's CLOCK_MONOTONIC ns, same host (serial line)
  kItchTimestamp = 3,    // the message's ITCH timestamp, ns since midnight
};

constexpr uint32_t kFlagFinalized = 1;  // record_count is exact; file was closed cleanly

struct Header {
  char magic[8];
  uint16_t version;
  uint16_t header_size;
  uint16_t record_size;
  uint16_t kind;
  uint16_t stage_clock;
  uint16_t origin_clock;
  uint32_t flags;
  uint64_t record_count;   // exact when finalized; 0 while writing
  uint64_t dropped;        // records not written (log full), exact when finalized
  char run_id[32];         // NUL-padded ASCII
  char commit[48];         // NUL-padded ASCII: git commit, "-dirty" if modified
  uint8_t stages;          // latency (version 3 and 4): the Stage stamps each record holds; else 0
  uint8_t levels;          // depth (version 2): N of a top-N log, 1 to 64; 0: every level (--levels all)
  uint8_t reserved[6];
};
static_assert(sizeof(Header) == kHeaderSize);

// Every record ends its write by storing `written` (nonzero): in a log that
// was never finalized, the records are the leading run with written != 0.
constexpr uint8_t kWritten = 0x80;

// The stages a latency record can stamp, in the order of its stamps. A log
// holds the stamps of the stages its run stamped and no others (header
// `stages`): each 8-byte stamp not recorded is 8 bytes less written, zeroed
// and paged in a message.
enum Stage : uint8_t {
  kStageKernel = 1,      // the kernel received the packet (UDP)
  kStageRead = 2,        // the read that returned it to user space (simulation: handed over)
  kStageDecoded = 4,     // message decoded into its typed view
  kStageBook = 8,        // book updated (or found unchanged)
  kStagePublished = 16,  // BBO event recorded and published; 0 if none
};
constexpr uint8_t kAllStages = 31;
constexpr unsigned kStageCount = 5;

// The stage indices (0 kernel .. 4 published) of these stages, in the order a record stores their stamps;
// returns how many.
inline unsigned stage_order(uint8_t stages, uint8_t (&order)[kStageCount]) {
  unsigned count = 0;
  for (unsigned i = 0; i < kStageCount; ++i)
    if (stages >> i & 1) order[count++] = uint8_t(i);
  return count;
}

// Version 3 and 4 (4: a longer header, stamps may be raw TSC ticks): this
// head, then one u64 stamp (per header.stage_clock) for each stage in
// header.stages, in Stage order. (Version 2, 64 bytes, held all five
// stamps, zero where not stamped; version 1, 56 bytes, had one t_receive.
// FORMAT.md keeps both layouts.)
struct LatencyRecord {
  uint64_t seq;           // MoldUDP64 sequence (binary ITCH file: 1-based position)
  uint64_t t_origin;      // per header.origin_clock; 0 when none
  uint16_t stock_locate;
  char msg_type;          // ITCH type byte as received
  uint8_t flags;          // kWritten | LatencyFlags
  uint8_t reserved[4];    // zero: explicit, so no byte of a log is left undefined
};
static_assert(sizeof(LatencyRecord) == 24 && alignof(LatencyRecord) == 8);

constexpr size_t latency_record_size(uint8_t stages) {
  return sizeof(LatencyRecord) + 8 * size_t(__builtin_popcount(stages & kAllStages));
}

// The stamps that follow a record's head (the log's records are 8-byte aligned).
inline uint64_t* stamps_of(LatencyRecord& r) { return reinterpret_cast<uint64_t*>(&r + 1); }

// Version 5: one 20-byte slot a message, its stamps as small differences. A
// message whose values do not fit is preceded by escape slots that carry them
// whole (FORMAT.md): the log stays the exact record of every stamp in about a
// third of version 4's bytes.
struct CompactLatencyRecord {
  uint32_t origin_delta;  // t_origin minus the previous message's (the first: minus 0); an escape when it does not fit
  uint32_t first;         // the first stage's stamp minus the base, plus 1; 0: not stamped
  uint16_t steps[4];      // each later stage's stamp minus the stamp before it in this record (or the base), plus 1;
                          // 0: not stamped, or carried by an escape slot
  uint16_t stock_locate;
  char msg_type;
  uint8_t flags;          // kWritten | LatencyFlags; kEscapeSlot clear
};
static_assert(sizeof(CompactLatencyRecord) == 20 && alignof(CompactLatencyRecord) == 4);
constexpr uint64_t kMaxFirst = 0xFFFFFFFEull;  // the largest difference `first` holds
constexpr uint64_t kMaxStep = 0xFFFEull;       // the largest difference a step holds
constexpr uint64_t kMaxOriginDelta = 0xFFFFFFFFull;

// A slot with kEscapeSlot in its flags carries one value for the message slot that follows it.
constexpr uint8_t kEscapeSlot = 0x40;
enum EscapeKind : uint8_t {
  kEscapeSeq = 1,     // that message's seq (the next ones count on from it; before any: 1)
  kEscapeOrigin = 2,  // that message's t_origin (its origin_delta is 0)
  kEscapeBase = 3,    // the base from that message on (before any: 0)
  kEscapeStamp = 8,   // + stage index (0 kernel .. 4 published): that stage's stamp of that message
};
struct LatencyEscape {
  uint32_t value_lo;  // the value, as two halves: a slot is 4-byte aligned
  uint32_t value_hi;
  uint8_t kind;       // EscapeKind
  uint8_t reserved[10];
  uint8_t flags;      // kWritten | kEscapeSlot
};
static_assert(sizeof(LatencyEscape) == sizeof(CompactLatencyRecord));

// When and how a packet (or serial line) reached the gateway, as its source saw it.
struct Arrival {
  uint64_t t_kernel = 0;  // stage clock; 0 when the transport has no kernel stamp
  uint64_t t_read = 0;    // stage clock; 0 when stamps are not recorded
  uint64_t t_origin = 0;  // per origin_clock
};

// One per packet (udp-replay) or line (serial-replay), both stamps on
// CLOCK_MONOTONIC: the clock the gateway's stage clock is calibrated to.
struct SendRecord {
  uint64_t seq;           // sequence number of its first message (0: none, e.g. a heartbeat)
  uint64_t t_intended;    // when the schedule said it was due
  uint64_t t_sent;        // when the send (sendmmsg / write) that carried it was called
  uint16_t count;         // messages in it
  uint8_t flags;          // kWritten | SendFlags
  uint8_t reserved;
  uint32_t bytes;         // payload bytes
};
static_assert(sizeof(SendRecord) == 32);

// One per BBO event a subscriber received, on CLOCK_MONOTONIC (stage_clock 1).
struct SubscriberRecord {
  uint64_t seq;           // of the BBO event
  uint64_t t_received;    // when the read that completed it returned
  uint16_t stock_locate;
  uint8_t flags;          // kWritten
  uint8_t reserved[5];
};
static_assert(sizeof(SubscriberRecord) == 24);

// One per retransmission request the re-request server received and one per
// answer packet it sent (or, as a fault, did not send), CLOCK_MONOTONIC.
struct RequestRecord {
  uint64_t seq;           // request: the first sequence asked for; answer: the first sequence in the packet
  uint64_t t;             // request: when it was received; answer: when it was sent (or would have been)
  uint32_t client_addr;   // the requester's IPv4 address, network byte order
  uint16_t client_port;   // the requester's port, host byte order
  uint16_t count;         // request: messages asked for; answer: messages in the packet
  uint8_t flags;          // kWritten | RequestFlags
  uint8_t outcome;        // request: RequestOutcome; answer: 0
  uint8_t reserved[6];
};
static_assert(sizeof(RequestRecord) == 32);

enum RequestFlags : uint8_t {
  kAnswer = 1,          // an answer packet, not a request
  kAnswerDropped = 2,   // an answer the server's fault policy did not send
};

// What became of a request: served, or the reason it was not (counted apart).
enum class RequestOutcome : uint8_t {
  kServed = 0,
  kWrongLength = 1,       // not 20 bytes
  kWrongSession = 2,      // another session's name
  kSequenceZero = 3,      // sequence 0: MoldUDP64 numbers messages from 1
  kCountZero = 4,         // asks for nothing
  kBeyondSession = 5,     // the first sequence is past the session's last message
  kOutsideRetention = 6,  // older than the messages the server still holds
  kRateLimited = 7,       // over the requester's rate limit (a flood)
  kAfterEndOfSession = 8, // arrived while the server no longer answers (its end-of-session window is over)
};

enum SendFlags : uint8_t {
  kSendFailed = 1,  // the send failed (not EAGAIN/ENOBUFS, which are retried): never left
  kSendLineB = 2,   // sent on the feed's B line (udp-replay --line-b); A otherwise
  kSendDropped = 4, // not sent: the line's fault policy dropped it (--drop-a/-b, bursts, silence)
  kSendDuplicate = 8,  // the line's second send of the packet (--duplicate-a/-b)
  kSendCorrupted = 16,  // serial: one of the line's payload digits damaged (serial-replay --corrupt-every)
};

enum LatencyFlags : uint8_t {
  kBboEvent = 1,     // the message changed the BBO
  kUnknownRef = 2,   // named an order not in the book
  kRejected = 4,     // malformed (unknown type / wrong length): not applied
};

enum BboFlags : uint8_t {
  // Messages were lost (a sequence gap, or a late message discarded) or
  // rejected before this event, so any stock's book may be wrong from then
  // on: the event is what the gateway computed, not what the feed meant.
  kBookMayBeStale = 1,
  // The book as a snapshot left it (a late join, docs/snapshot.md): its seq is the snapshot's last message.
  kFromSnapshot = 2,
};

struct BboRecord {
  uint64_t seq;
  uint64_t timestamp;     // ITCH timestamp of the message, ns since midnight
  uint64_t bid_qty;
  uint64_t ask_qty;
  uint32_t bid_px;        // 4 implied decimals; 0 = empty side
  uint32_t ask_px;
  uint16_t stock_locate;
  uint8_t flags;          // kWritten | BboFlags
  uint8_t reserved[5];
};
static_assert(sizeof(BboRecord) == 48);

// One block of the latency log: where it starts, and what a report's first pass over it finds, counted by the
// gateway as it wrote the block, so the report need not read the log twice (FORMAT.md, "Latency index record").
// A block is kLatencyBlockMessages messages recorded (the last, fewer). Its stamp sets: bit m of the 128 set when
// an accepted message of the block had the stamps of m, bit i (0 to 4) its stage i recorded nonzero, bit 5 a
// nonzero t_origin, bit 6 the BBO-event flag.
constexpr uint32_t kLatencyBlockMessages = 1u << 16;
constexpr unsigned kStampSetOrigin = 5, kStampSetBbo = 6;
struct LatencyBlockRecord {
  uint64_t slot;             // its first slot: its first message's first escape slot, or that message's slot
  uint64_t messages_before;  // messages recorded before it
  uint64_t accepted_before;  // of those, not rejected
  uint64_t next_seq;         // the compact coder's state at slot (a wide log: 0, 0, 0)
  uint64_t prev_origin;
  uint64_t base;
  uint64_t receive_lo;       // its accepted messages' receive stamps (kernel, else read; 0: neither), as stored
  uint64_t receive_hi;
  uint64_t stamp_sets[2];
  uint32_t messages;         // recorded in it
  uint32_t accepted;         // of those, not rejected
  uint32_t slots;            // its slots: the next block's begins at slot + slots, the log ends after the last's
  uint16_t max_locate;       // of its accepted messages
  uint8_t flags;             // kWritten
  uint8_t reserved;
};
static_assert(sizeof(LatencyBlockRecord) == 96);

// A depth event as a whole: after a book message, a stock's top N levels a side (price and aggregate shares), when
// they differ from the last emitted. The head is followed by N bid levels, then N ask levels, each best first; an
// empty level is price 0, shares 0. A version-1 depth log's record; the gateway now logs an event as the levels it
// changed (LevelChangeRecord), and the harness's reader rebuilds this from them (log_reader_c.h).
struct DepthRecord {
  uint64_t seq;
  uint64_t timestamp;     // ITCH timestamp of the message, ns since midnight
  uint16_t stock_locate;
  uint8_t flags;          // kWritten | BboFlags
  uint8_t reserved[5];
};
static_assert(sizeof(DepthRecord) == 24);
struct DepthLevel {
  uint32_t px;            // 4 implied decimals; 0 = no level
  uint32_t reserved;
  uint64_t qty;           // aggregate shares at the price
};
static_assert(sizeof(DepthLevel) == 16);
// One level of a depth event, the record of the depth log (version 2) and the frame its publishers send.
// Every level (--levels all): one record per level a book message changed, the level's new aggregate shares (0: the
// level left the book); a replace to another price changes two levels, two records of its seq, the old price's first.
// Applied in order to empty books, the records give every stock's whole book after every message.
// The top N (--levels N): one record per price whose shares among the side's top N levels the message changed, best
// first: a level that entered the top N or changed in it (its shares), or left it (0: emptied, or pushed below the
// Nth). Applied in order to empty books, kept to N levels a side, they give each stock's top N after each event;
// an event is 1.06 records on nasdaq-day at 5 levels, 34 bytes where its whole top N is 184.
struct LevelChangeRecord {
  uint64_t seq;
  uint64_t timestamp;     // ITCH timestamp of the message, ns since midnight
  uint16_t stock_locate;  // at the DepthRecord's offset: a subscriber finds it in either
  uint8_t flags;          // kWritten | BboFlags
  uint8_t side;           // 'B' or 'S'
  uint32_t px;            // 4 implied decimals
  uint64_t qty;           // aggregate shares at the price after the message (0: gone from the book, or the top N)
};
static_assert(sizeof(LevelChangeRecord) == 32);
// A depth log's slot (version 3, FORMAT.md "Level change slot"): a level change in half a LevelChangeRecord. Its
// seq and timestamp are offsets from the last anchor slot before it, which holds them whole; a level whose shares
// do not fit 32 bits has a high-shares slot just before it. Every kind has its flags in the last byte.
struct LevelChangeSlot {
  uint32_t px;
  uint32_t qty_low;       // the level's shares, low 32 bits
  uint32_t timestamp_off; // the message's ITCH timestamp minus the anchor's
  uint16_t stock_locate;
  uint8_t seq_off;        // the message's seq minus the anchor's
  uint8_t flags;          // kWritten | BboFlags | kSlotBid | the slot's kind (kSlotKindMask)
};
static_assert(sizeof(LevelChangeSlot) == 16);
constexpr uint8_t kSlotBid = 0x04;          // a level change of the bids (else the offers)
constexpr uint8_t kSlotKindMask = 0x30;
constexpr uint8_t kSlotLevelChange = 0x00;
constexpr uint8_t kSlotAnchor = 0x10;       // bytes 0-7: seq; 8-13: timestamp (48 bits); 14: zero
constexpr uint8_t kSlotHighShares = 0x20;   // bytes 0-3: the next slot's shares >> 32; 4-14: zero
// A slot's flags carry the BBO flags as they are: a new BBO flag must take a bit no slot uses.
static_assert(((kBookMayBeStale | kFromSnapshot) & (kWritten | kSlotBid | kSlotKindMask)) == 0);

// The head (seq, timestamp, stock, flags) where the whole event has it: a writer and a subscriber take either.
static_assert(offsetof(LevelChangeRecord, seq) == offsetof(DepthRecord, seq) &&
              offsetof(LevelChangeRecord, timestamp) == offsetof(DepthRecord, timestamp) &&
              offsetof(LevelChangeRecord, stock_locate) == offsetof(DepthRecord, stock_locate) &&
              offsetof(LevelChangeRecord, flags) == offsetof(DepthRecord, flags));
constexpr uint32_t kMaxDepthLevels = 64;
constexpr uint32_t kAllLevels = 0xFFFFFFFF;  // --levels all
// A depth event of N levels a side as a whole (DepthRecord and its levels).
constexpr size_t depth_event_size(uint32_t levels) {
  return sizeof(DepthRecord) + 2 * size_t(levels) * sizeof(DepthLevel);
}
// The header's levels byte for --levels N: N, or 0 for every level.
constexpr uint8_t depth_header_levels(uint32_t levels) { return levels == kAllLevels ? 0 : uint8_t(levels); }
// A --levels value: 0 (no depth) to 64, or "all" (kAllLevels); false when the text is neither.
inline bool parse_depth_levels(const std::string& text, uint32_t& levels) {
  if (text == "all") {
    levels = kAllLevels;
    return true;
  }
  if (text.empty() || text.size() > 2 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  levels = uint32_t(std::stoul(text));
  return levels <= kMaxDepthLevels;
}

}  // namespace itchbench::logfmt
