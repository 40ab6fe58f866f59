// Framing + decoding throughput: MoldUDP64 parse, sequence tracking and
// itch::decode into each message's typed view, for a nasdaq-day capture held
// in memory. A field of every view is folded into a checksum so the compiler
// cannot drop the decode.
#include <benchmark/benchmark.h>

#include "bench/bench_capture.hpp"
#include "pipeline/mold_framer.hpp"
#include "protocol/itch.hpp"

using namespace itchbench;

namespace {

constexpr uint64_t kMessages = 2000000;

// One field per view: the work a consumer does at the least.
struct FoldVisitor {
  uint64_t acc = 0;
  template <class View>
  void operator()(const View& v) {
    acc += v.stock_locate();
    if constexpr (std::is_same_v<View, itch::AddOrderView>) acc += v.price();
    if constexpr (std::is_same_v<View, itch::OrderDeleteView>) acc += v.order_ref();
    if constexpr (std::is_same_v<View, itch::OrderReplaceView>) acc += v.new_order_ref();
  }
};

void BM_MoldFrameAndDecode(benchmark::State& state) {
  const auto& cap = bench::nasdaq_day_capture(kMessages);
  for (auto _ : state) {
    MoldFramer framer;
    FoldVisitor fold;
    uint64_t bad = 0;
    for (size_t i = 0; i < cap.datagrams(); ++i) {
      const uint8_t* p = cap.bytes.data() + cap.offsets[i];
      framer.on_datagram(p, cap.offsets[i + 1] - cap.offsets[i], [&](uint64_t, const uint8_t* m, size_t n) {
        bad += itch::decode(m, n, fold) != itch::DecodeStatus::kOk;
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
    FoldVisitor fold;
    for (const auto& [m, n] : msgs) itch::decode(m, n, fold);
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

}  // namespace

BENCHMARK_MAIN();
