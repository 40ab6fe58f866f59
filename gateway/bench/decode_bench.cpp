// Framing + decoding throughput: MoldUDP64 parse, sequence tracking and
// itch::decode_book_op (the gateway's decode: type and length checked, the
// book's fields read) for a nasdaq-day capture held in memory. Every field of
// every op is folded into a checksum so the compiler cannot drop the decode.
// With ITCHBENCH_ITCH_FILE set, also the binary ITCH file it names:
// length-prefix framing and decoding of every message, the file
// memory-mapped and read once before timing (what a peer's decode mode
// measures, for side-by-side runs).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "bench/bench_capture.hpp"
#include "pipeline/gap_recovery.hpp"
#include "pipeline/mold_framer.hpp"
#include "protocol/book_op.hpp"
#include "protocol/itch_file.hpp"
#include "util/mapped_file.hpp"

using namespace itchbench;

namespace {

constexpr uint64_t kMessages = 2000000;

// Decodes one message and folds every field the book would read.
struct Fold {
  uint64_t acc = 0;
  itch::DecodeStatus operator()(const uint8_t* m, size_t n) {
    itch::BookOp op;
    const itch::DecodeStatus st = itch::decode_book_op(m, n, op);
    acc += op.ref + op.new_ref + op.shares + op.price + op.locate + uint8_t(op.side) + uint8_t(op.kind);
    return st;
  }
};

void BM_MoldFrameAndDecode(benchmark::State& state) {
  const auto& cap = bench::nasdaq_day_capture(kMessages);
  for (auto _ : state) {
    MoldFramer framer;
    Fold fold;
    uint64_t bad = 0;
    for (size_t i = 0; i < cap.datagrams(); ++i) {
      const uint8_t* p = cap.bytes.data() + cap.offsets[i];
      framer.on_datagram(p, cap.offsets[i + 1] - cap.offsets[i], [&](uint64_t, const uint8_t* m, size_t n) {
        bad += fold(m, n) != itch::DecodeStatus::kOk;
      });
    }
    benchmark::DoNotOptimize(fold.acc);
    benchmark::DoNotOptimize(bad);
    if (framer.counters().messages != cap.messages) state.SkipWithError("message count mismatch");
  }
  state.SetItemsProcessed(int64_t(state.iterations() * cap.messages));
  state.counters["datagrams"] = double(cap.datagrams());
}
BENCHMARK(BM_MoldFrameAndDecode)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// Decoding alone over the same messages, for the profile of where time goes.
void BM_DecodeOnly(benchmark::State& state) {
  const auto& cap = bench::nasdaq_day_capture(kMessages);
  // Flatten the messages once: (pointer, length) pairs.
  std::vector<std::pair<const uint8_t*, uint16_t>> msgs;
  MoldFramer framer;
  for (size_t i = 0; i < cap.datagrams(); ++i)
    framer.on_datagram(cap.bytes.data() + cap.offsets[i], cap.offsets[i + 1] - cap.offsets[i],
                       [&](uint64_t, const uint8_t* m, size_t n) { msgs.push_back({m, uint16_t(n)}); });
  for (auto _ : state) {
    Fold fold;
    for (const auto& [m, n] : msgs) fold(m, n);
    benchmark::DoNotOptimize(fold.acc);
  }
  state.SetItemsProcessed(int64_t(state.iterations() * msgs.size()));
}
BENCHMARK(BM_DecodeOnly)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// Framing alone: parse and sequence-track, touching no message bytes.
void BM_MoldFrameOnly(benchmark::State& state) {
  const auto& cap = bench::nasdaq_day_capture(kMessages);
  for (auto _ : state) {
    MoldFramer framer;
    uint64_t total = 0;
    for (size_t i = 0; i < cap.datagrams(); ++i)
      framer.on_datagram(cap.bytes.data() + cap.offsets[i], cap.offsets[i + 1] - cap.offsets[i],
                         [&](uint64_t, const uint8_t*, size_t n) { total += n; });
    benchmark::DoNotOptimize(total);
  }
  state.SetItemsProcessed(int64_t(state.iterations() * cap.messages));
  state.counters["ns_per_datagram"] = benchmark::Counter(double(state.iterations() * cap.datagrams()),
                                                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_MoldFrameOnly)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// The recovery stage in front of the framer (gap_recovery.hpp), touching no message bytes: state.range(0) = 1,
// line A alone, in sequence (the fast path's branch); 2, every packet on A then its copy on B (arbitration:
// the copy found a duplicate and dropped); 3, B four packets behind A and 2 % of A's packets lost (seeded), so B
// fills each gap while A's later packets wait in the hold. Items: datagrams of line A, so the ns a datagram are
// comparable with BM_MoldFrameOnly's per-datagram figure (its counter).
void BM_ArbitratedFrameOnly(benchmark::State& state) {
  const auto& cap = bench::nasdaq_day_capture(kMessages);
  const int mode = int(state.range(0));
  struct Sink {
    MoldFramer framer;
    uint64_t total = 0;
    void packet(const mold::Packet& p, const logfmt::Arrival&) {
      framer.on_packet(p, [&](uint64_t, const uint8_t*, size_t n) { total += n; }, [](const uint8_t*, size_t) {});
    }
    void malformed(const uint8_t*, size_t, const logfmt::Arrival&) {}
    bool request(const mold::Request&) { return true; }
  };
  RecoveryOptions o;
  o.line_b = true;
  o.hold_packets = 256;
  const size_t n = cap.datagrams();
  auto at = [&](size_t i) { return cap.bytes.data() + cap.offsets[i]; };
  auto len = [&](size_t i) { return cap.offsets[i + 1] - cap.offsets[i]; };
  uint64_t rng = 0x2545F4914F6CDD1Dull;  // xorshift64: the same losses every iteration
  std::vector<bool> lost_on_a(n);
  for (size_t i = 0; i < n; ++i) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    lost_on_a[i] = mode == 3 && i > 0 && rng % 100 < 2;
  }
  for (auto _ : state) {
    GapRecovery stage(o);
    Sink sink;
    for (size_t i = 0; i < n; ++i) {
      if (!lost_on_a[i]) stage.on_datagram(at(i), len(i), Line::kA, {}, sink);
      if (mode == 2) stage.on_datagram(at(i), len(i), Line::kB, {}, sink);
      if (mode == 3 && i >= 4) stage.on_datagram(at(i - 4), len(i - 4), Line::kB, {}, sink);
    }
    for (size_t i = mode == 3 ? (n >= 4 ? n - 4 : 0) : n; i < n; ++i) stage.on_datagram(at(i), len(i), Line::kB, {}, sink);
    benchmark::DoNotOptimize(sink.total);
    if (sink.framer.counters().messages != cap.messages) state.SkipWithError("message count mismatch");
    state.counters["held"] = double(stage.counters().held_packets);
  }
  state.SetItemsProcessed(int64_t(state.iterations() * n));
}
BENCHMARK(BM_ArbitratedFrameOnly)->Arg(1)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->MinTime(1.0);

void BM_ItchFileFrameAndDecode(benchmark::State& state, const std::string& path) {
  const MappedFile file(path);
  uint64_t warm = 0;
  for (size_t i = 0; i < file.size(); i += 4096) warm += file.data()[i];  // pages in before timing
  benchmark::DoNotOptimize(warm);
  uint64_t messages = 0;
  for (auto _ : state) {
    Fold fold;
    uint64_t bad = 0;
    messages = 0;
    itch::FileError err;
    const bool ok = itch::walk_length_prefixed(file.data(), file.size(), [&](uint64_t, const uint8_t* m, size_t n) {
      ++messages;
      bad += fold(m, n) != itch::DecodeStatus::kOk;
    }, &err);
    benchmark::DoNotOptimize(fold.acc);
    benchmark::DoNotOptimize(bad);
    if (!ok) state.SkipWithError(err.reason.c_str());
  }
  state.SetItemsProcessed(int64_t(state.iterations() * messages));
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* path = std::getenv("ITCHBENCH_ITCH_FILE"))
    benchmark::RegisterBenchmark("BM_ItchFileFrameAndDecode", BM_ItchFileFrameAndDecode, std::string(path))
        ->Unit(benchmark::kMillisecond)
        ->MinTime(1.0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
