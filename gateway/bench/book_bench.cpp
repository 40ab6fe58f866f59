// Gateway core benchmarks on sessions generated at benchmark time: decode +
// book + BBO per message (nasdaq-day and deep-book), the same with both logs
// recorded (nasdaq-day), memory per live order, the latency recorder's cost
// per record, and the cost of one stage stamp.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_capture.hpp"
#include "pipeline/gateway.hpp"
#include "pipeline/stamps.hpp"
#include "util/stage_clock.hpp"

using namespace itchbench;

namespace {

constexpr uint64_t kMessages = 5000000;

std::string scratch(const char* name) { return "/tmp/itchbench-bench-" + std::to_string(::getpid()) + "-" + name; }

// A latency log whose records stamp these stages, as the gateway opens one.
std::unique_ptr<LatencyLog> latency_log(const std::string& path, uint8_t stages, LatencyFormat format) {
  LogIdentity id;
  id.stages = stages;
  return std::make_unique<LatencyLog>(path, format, id);
}

// A message as a simulation run stamps it: stages ~40 ticks apart, messages ~150 (no escapes in a compact log).
MessageLatency stamped_message(uint64_t i, uint8_t stages) {
  MessageLatency m;
  m.seq = i + 1;
  m.t_origin = 1000 * i;
  m.msg_type = 'A';
  for (unsigned k = 0; k < logfmt::kStageCount; ++k)
    if (stages >> k & 1) m.stamp[k] = 1'000'000 + 150 * i + 40 * k;
  return m;
}

const char* format_name(int64_t format) { return format == 0 ? "compact" : "wide"; }

template <class Run>
void feed(const bench::InMemoryCapture& cap, Run&& on_datagram) {
  for (size_t i = 0; i < cap.datagrams(); ++i)
    on_datagram(cap.bytes.data() + cap.offsets[i], cap.offsets[i + 1] - cap.offsets[i]);
}

// Framing + decoding + book + BBO detection, nothing recorded, on two session
// shapes: nasdaq-day (5 M messages, 500 stocks, shallow books, ~32 k live
// orders at the end) and deep-book (3 M messages, 40 stocks, prices over 400
// ticks, ~1.36 M live orders and hundreds of levels a side at the end). The
// argument pre-sizes the order index.
void decode_book_bbo(benchmark::State& state, const bench::InMemoryCapture& cap) {
  const StageClock clock = StageClock::calibrate();
  uint64_t live = 0, memory = 0, events = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto book = std::make_unique<OrderBook>(size_t(state.range(0)));
    NullPublisher pub;
    Gateway<NullPublisher> gw(*book, clock, nullptr, nullptr, pub);
    state.ResumeTiming();
    feed(cap, [&](const uint8_t* p, size_t n) { gw.on_datagram(p, n, logfmt::Arrival{}); });
    state.PauseTiming();
    live = book->live_orders();
    memory = book->memory_bytes();
    events = gw.bbo_events();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(int64_t(state.iterations() * cap.messages));
  state.counters["ns_per_msg"] = benchmark::Counter(double(cap.messages), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["bbo_events"] = double(events);
  state.counters["live_orders_end"] = double(live);
  state.counters["book_MiB"] = double(memory) / (1 << 20);
}
void BM_DecodeBookBbo(benchmark::State& state) { decode_book_bbo(state, bench::nasdaq_day_capture(kMessages)); }
BENCHMARK(BM_DecodeBookBbo)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->MinTime(2.0);
void BM_DecodeBookBboDeepBook(benchmark::State& state) {
  decode_book_bbo(state, bench::session_capture("deep-book", 0));
}
BENCHMARK(BM_DecodeBookBboDeepBook)->Arg(1 << 16)->Arg(1 << 21)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Memory per live order: a book pre-sized for and holding N live orders (no
// deletes), minus a book sized for none, per order: pool slot, index slots
// (at most half full) and price levels.
void BM_MemoryPerLiveOrder(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  double per_order = 0;
  for (auto _ : state) {
    OrderBook full(n);
    for (size_t i = 0; i < n; ++i)
      full.add(uint16_t(1 + i % 500), i + 1, i % 2 ? 'B' : 'S', 100, uint32_t(100000 + (i * 7919) % 2000 * 100));
    per_order = double(full.memory_bytes() - OrderBook(0).memory_bytes()) / double(n);
    benchmark::DoNotOptimize(full);
  }
  state.counters["bytes_per_live_order"] = per_order;
}
BENCHMARK(BM_MemoryPerLiveOrder)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->Iterations(1);

// The whole simulation pipeline: stage stamps, latency and BBO logs. Arg: 0 compact latency records, 1 wide.
void BM_PipelineRecorded(benchmark::State& state) {
  const auto format = LatencyFormat(state.range(0));
  state.SetLabel(format_name(state.range(0)));
  const auto& cap = bench::nasdaq_day_capture(kMessages);
  const StageClock clock = StageClock::calibrate();
  for (auto _ : state) {
    state.PauseTiming();
    auto book = std::make_unique<OrderBook>(1 << 20);
    const auto lat = latency_log(scratch("lat"), kAllStamps, format);
    BboLog bbo(scratch("bbo"), logfmt::Kind::kBbo, {});
    NullPublisher pub;
    Gateway<NullPublisher> gw(*book, clock, lat.get(), &bbo, pub);
    state.ResumeTiming();
    feed(cap, [&](const uint8_t* p, size_t n) { gw.on_datagram(p, n, logfmt::Arrival{0, clock.now(), 0}); });
    state.PauseTiming();
    lat->close();
    bbo.close();
    ::unlink(scratch("lat").c_str());
    ::unlink(scratch("bbo").c_str());
    state.ResumeTiming();
  }
  state.SetItemsProcessed(int64_t(state.iterations() * cap.messages));
  state.counters["ns_per_msg"] = benchmark::Counter(double(cap.messages), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PipelineRecorded)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The latency recorder, hot path: one message encoded into the log, as the
// gateway hands it over, in pages the provisioning thread has already made
// ready (what the gateway sees at any message rate it can sustain).
// Wall-clock time. Args: the stages recorded — `--stamps book` and
// simulation's every stamp — and the format (0 compact, 1 wide: 32 or 56 bytes).
void BM_LatencyRecordAppend(benchmark::State& state) {
  const uint8_t stages = uint8_t(state.range(0));
  const auto format = LatencyFormat(state.range(1));
  state.SetLabel(format_name(state.range(1)));
  // Exactly the two chunks kept ready ahead: what the writer meets while provisioning keeps up.
  const uint64_t records = 2 * MmapLog::kChunkBytes / LatencyLog::slot_size(format, stages);
  uint64_t writer_grows = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const auto lat = latency_log(scratch("rec"), stages, format);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // let provisioning get ahead
    state.ResumeTiming();
    for (uint64_t i = 0; i < records; ++i) lat->append(stamped_message(i, stages));
    state.PauseTiming();
    writer_grows += lat->writer_grows();
    lat->close();
    ::unlink(scratch("rec").c_str());
    state.ResumeTiming();
  }
  state.SetItemsProcessed(int64_t(state.iterations() * records));
  state.counters["ns_per_record"] = benchmark::Counter(double(records), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["writer_grows"] = double(writer_grows);
}
BENCHMARK(BM_LatencyRecordAppend)->ArgsProduct({{kStampBook, kAllStamps}, {0, 1}})->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

// The recorder flooded: records appended as fast as one core can store,
// far more than is provisioned ahead, so the writer outruns the kernel's page
// provisioning and waits for it. The sustained ceiling, not the hot path.
// Arg: 0 compact, 1 wide (every simulation stamp).
void BM_LatencyRecordFlood(benchmark::State& state) {
  constexpr uint64_t kRecords = 8000000;
  const auto format = LatencyFormat(state.range(0));
  state.SetLabel(format_name(state.range(0)));
  for (auto _ : state) {
    state.PauseTiming();
    const auto lat = latency_log(scratch("flood"), kAllStamps, format);
    state.ResumeTiming();
    for (uint64_t i = 0; i < kRecords; ++i) lat->append(stamped_message(i, kAllStamps));
    state.PauseTiming();
    lat->close();
    ::unlink(scratch("flood").c_str());
    state.ResumeTiming();
  }
  state.SetItemsProcessed(int64_t(state.iterations() * kRecords));
  state.counters["ns_per_record"] = benchmark::Counter(double(kRecords), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_LatencyRecordFlood)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// Cost of one stage stamp: every latency figure includes it.
void BM_StageClockNow(benchmark::State& state) {
  const StageClock clock = StageClock::calibrate();
  for (auto _ : state) benchmark::DoNotOptimize(clock.now());
}
BENCHMARK(BM_StageClockNow);

// A stamp amid the book's kind of work: independent loads that miss the
// cache, which the core overlaps many at a time, with (Arg 1) or without a
// stamp between them. Where nothing after a TSC read starts until the loads
// before it are done (Intel here: the time per load goes from the overlapped
// miss to a whole one), a stamp costs far more in the pipeline than back to
// back (BM_StageClockNow).
void BM_StageClockAmidMisses(benchmark::State& state) {
  const bool stamped = state.range(0) != 0;
  const StageClock clock = StageClock::calibrate();
  static const std::vector<uint64_t> table = [] {
    std::vector<uint64_t> t(size_t(128) << 17);  // 128 MiB: far beyond the caches
    for (size_t i = 0; i < t.size(); ++i) t[i] = i;
    return t;
  }();
  const size_t mask = table.size() - 1;
  uint64_t x = 0x9E3779B97F4A7C15ull, sum = 0, stamp = 0;
  for (auto _ : state) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    sum += table[x & mask];  // the next index does not depend on it: the misses can overlap
    if (stamped) stamp = clock.now();
    benchmark::DoNotOptimize(stamp);
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(int64_t(state.iterations()));
}
BENCHMARK(BM_StageClockAmidMisses)->Arg(0)->Arg(1);

void BM_ClockGettimeMonotonic(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(monotonic_ns());
}
BENCHMARK(BM_ClockGettimeMonotonic);

}  // namespace

BENCHMARK_MAIN();
