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
}
BENCHMARK(BM_MoldFrameOnly)->Unit(benchmark::kMillisecond)->MinTime(1.0);

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
