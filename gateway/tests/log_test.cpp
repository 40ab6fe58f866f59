#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "log/mmap_log.hpp"
#include "test_files.hpp"

using namespace itchbench;
using itchbench::testing::ScratchDir;

namespace {
logfmt::Header header_of(const std::vector<uint8_t>& bytes) {
  logfmt::Header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  return h;
}
logfmt::BboRecord bbo_record(uint64_t i) {
  logfmt::BboRecord r{};
  r.seq = i + 1;
  r.timestamp = 1000 * i;
  r.bid_px = uint32_t(i);
  r.stock_locate = uint16_t(i % 10);
  return r;
}
}  // namespace

// The wide latency record through the generic log: claim, tail of stamps, commit (log/latency_log.hpp encodes
// whole messages on top of it).
using WideLatencyRecords = RecordLog<logfmt::LatencyRecord>;

TEST(MmapLog, ResidentMemoryStaysAFewChunksWhateverTheLength) {
  // Thirty chunks of records: written through the mapping, they would all stay resident unless released behind
  // the writer. The ceiling is what the design keeps at most for a writer this fast (a flood): kMaxChunksAhead
  // populated ahead, the one being written, up to two behind (released once a whole chunk lies behind the writer).
  // The helper thread that releases them may be slow to run on a loaded machine, so each sample waits up to two
  // seconds for it.
  ScratchDir dir;
  const std::string path = dir.file("long.bbo");
  const uint64_t before = itchbench::testing::resident_kib();
  const uint64_t ceiling = (MmapLog::kMaxChunksAhead + 3) * MmapLog::kChunkBytes / 1024;
  const uint64_t records = 30 * MmapLog::kChunkBytes / sizeof(logfmt::BboRecord);
  uint64_t peak = 0;
  {
    BboLog log(path, logfmt::Kind::kBbo, {});
    for (uint64_t i = 0; i < records; ++i) {
      log.append(bbo_record(i));
      if (i % (1 << 18) == 0) {
        uint64_t grown = itchbench::testing::resident_kib() - before;
        for (int wait = 0; wait < 400 && grown >= ceiling; ++wait) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          grown = itchbench::testing::resident_kib() - before;
        }
        peak = std::max(peak, grown);
      }
    }
    EXPECT_EQ(log.dropped(), 0u);
    log.close();
  }
  EXPECT_LT(peak, ceiling) << "resident grew by " << peak << " kB";
  EXPECT_EQ(std::filesystem::file_size(path), logfmt::kHeaderSize + records * sizeof(logfmt::BboRecord));
}

TEST(MmapLog, FinalizedLogHasExactCountAndSize) {
  ScratchDir dir;
  const std::string path = dir.file("b.bbo");
  {
    BboLog log(path, logfmt::Kind::kBbo, {logfmt::StageClock::kNone, logfmt::OriginClock::kNone, "run-1", "abc123"});
    for (uint64_t i = 0; i < 1000; ++i) log.append(bbo_record(i));
    EXPECT_EQ(log.records(), 1000u);
    log.close();
  }
  const auto bytes = itchbench::testing::read_bytes(path);
  ASSERT_EQ(bytes.size(), logfmt::kHeaderSize + 1000 * sizeof(logfmt::BboRecord));
  const logfmt::Header h = header_of(bytes);
  EXPECT_EQ(std::memcmp(h.magic, "ITCHBLOG", 8), 0);
  EXPECT_EQ(h.version, 1);
  EXPECT_EQ(h.record_size, 48);
  EXPECT_EQ(h.kind, 2);
  EXPECT_EQ(h.flags & logfmt::kFlagFinalized, logfmt::kFlagFinalized);
  EXPECT_EQ(h.record_count, 1000u);
  EXPECT_STREQ(h.run_id, "run-1");
  EXPECT_STREQ(h.commit, "abc123");
  logfmt::BboRecord r;
  std::memcpy(&r, bytes.data() + logfmt::kHeaderSize + 999 * sizeof r, sizeof r);
  EXPECT_EQ(r.seq, 1000u);
  EXPECT_EQ(r.flags, logfmt::kWritten);
}

TEST(MmapLog, CrashedWriterLeavesWholeRecordsThenZeros) {
  ScratchDir dir;
  const std::string path = dir.file("crash.lat");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    WideLatencyRecords log(path, logfmt::Kind::kLatency, {logfmt::StageClock::kTscTicks, logfmt::OriginClock::kNone, "crash", ""});
    for (uint64_t i = 0; i < 12345; ++i) {
      logfmt::LatencyRecord r{};
      r.seq = i + 1;
      r.msg_type = 'A';
      log.append(r);
    }
    ::raise(SIGKILL);  // no close(), no destructors: as a crash
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  const auto bytes = itchbench::testing::read_bytes(path);
  const logfmt::Header h = header_of(bytes);
  EXPECT_EQ(h.flags & logfmt::kFlagFinalized, 0u);
  EXPECT_EQ(h.record_count, 0u);
  const size_t rs = sizeof(logfmt::LatencyRecord);
  ASSERT_GT(bytes.size(), logfmt::kLatencyHeaderSize + 12345 * rs);  // chunk-rounded
  size_t whole = 0;
  while (logfmt::kLatencyHeaderSize + (whole + 1) * rs <= bytes.size() &&
         (bytes[logfmt::kLatencyHeaderSize + whole * rs + offsetof(logfmt::LatencyRecord, flags)] & logfmt::kWritten))
    ++whole;
  EXPECT_EQ(whole, 12345u);
  logfmt::LatencyRecord last;
  std::memcpy(&last, bytes.data() + logfmt::kLatencyHeaderSize + (whole - 1) * rs, rs);
  EXPECT_EQ(last.seq, 12345u);
}

TEST(MmapLog, FullLogDropsAndCounts) {
  ScratchDir dir;
  // A limit of one chunk: header + as many records as fit.
  MmapLog log(dir.file("small"), logfmt::Kind::kBbo, 48, offsetof(logfmt::BboRecord, flags), {}, MmapLog::kChunkBytes,
              MmapLog::kChunkBytes);
  const uint64_t fit = (MmapLog::kChunkBytes - logfmt::kHeaderSize) / 48;
  for (uint64_t i = 0; i < fit + 10; ++i) log.next();
  EXPECT_EQ(log.records(), fit);
  EXPECT_EQ(log.dropped(), 10u);
  EXPECT_NE(log.drop_reason().find("limit"), std::string::npos) << log.drop_reason();
  log.close();
}

TEST(MmapLog, AShortReservationIsOutgrownWithoutDroppingARecord) {
  // The first reservation is a guess (a compressed capture's size bounds nothing): a log that was given room for
  // one page must take forty chunks' worth of records, each where it belongs, moving its mapping as it goes.
  ScratchDir dir;
  const std::string path = dir.file("grown.bbo");
  const uint64_t records = 40 * MmapLog::kChunkBytes / sizeof(logfmt::BboRecord) + 17;
  {
    BboLog log(path, logfmt::Kind::kBbo, {}, 4096);
    for (uint64_t i = 0; i < records; ++i) log.append(bbo_record(i));
    EXPECT_EQ(log.dropped(), 0u);
    EXPECT_GE(log.remaps(), 10u);  // 4 KiB doubled to past 640 MiB
    EXPECT_EQ(log.drop_reason(), "");
    log.close();
  }
  const auto bytes = itchbench::testing::read_bytes(path);
  ASSERT_EQ(bytes.size(), logfmt::kHeaderSize + records * sizeof(logfmt::BboRecord));
  EXPECT_EQ(header_of(bytes).record_count, records);
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < records; i += 997) {
    logfmt::BboRecord want = bbo_record(i), got;
    want.flags = logfmt::kWritten;
    std::memcpy(&got, bytes.data() + logfmt::kHeaderSize + i * sizeof got, sizeof got);
    wrong += std::memcmp(&got, &want, sizeof got) != 0;
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(MmapLog, ClaimedRecordsReadZeroWhereNotFilledAndAFullLogTakesNone) {
  // The gateway fills latency records in place and leaves fields it has no value for unset (a read stamp the
  // source did not take, the reserved bytes), relying on claim() handing out zeroed space: through three chunks
  // of growth every byte it did not set must read zero. Past the limit, claims go to a scratch record:
  // counted as dropped, nothing written to the file.
  ScratchDir dir;
  const std::string path = dir.file("claimed.lat");
  const uint8_t stages = logfmt::kStageRead | logfmt::kStageBook;  // two stamps: read (slot 0), book (slot 1)
  const size_t rs = logfmt::latency_record_size(stages);
  const uint64_t fit = (3 * MmapLog::kChunkBytes - logfmt::kLatencyHeaderSize) / rs;
  {
    LogIdentity id;
    id.stages = stages;
    WideLatencyRecords log(path, logfmt::Kind::kLatency, id, 3 * MmapLog::kChunkBytes, rs, 3 * MmapLog::kChunkBytes);
    for (uint64_t i = 0; i < fit + 5; ++i) {
      logfmt::LatencyRecord& r = log.claim();
      r.seq = i + 1;
      logfmt::stamps_of(r)[1] = 7 * i;
      WideLatencyRecords::commit(r, i % 2 ? logfmt::kBboEvent : 0);
    }
    EXPECT_EQ(log.records(), fit);
    EXPECT_EQ(log.dropped(), 5u);
    log.close();
  }
  const auto bytes = itchbench::testing::read_bytes(path);
  ASSERT_EQ(bytes.size(), logfmt::kLatencyHeaderSize + fit * rs);
  struct Record {
    logfmt::LatencyRecord head;
    uint64_t read, book;
  };
  ASSERT_EQ(sizeof(Record), rs);
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < fit; ++i) {
    Record want{};
    want.head.seq = i + 1;
    want.head.flags = uint8_t(logfmt::kWritten | (i % 2 ? logfmt::kBboEvent : 0));
    want.book = 7 * i;
    wrong += std::memcmp(bytes.data() + logfmt::kLatencyHeaderSize + i * rs, &want, rs) != 0;
  }
  EXPECT_EQ(wrong, 0u);
}

TEST(MmapLog, ARecordClaimedButNeverCommittedIsNotInTheClosedLog) {
  // The gateway claims a message's record before handling it and commits it after; if the handling throws,
  // the run ends with that claim open. The finalized log must end before it, its count the committed ones.
  ScratchDir dir;
  const std::string path = dir.file("open-claim.lat");
  {
    WideLatencyRecords log(path, logfmt::Kind::kLatency, {});
    for (uint64_t i = 0; i < 10; ++i) {
      logfmt::LatencyRecord& r = log.claim();
      r.seq = i + 1;
      WideLatencyRecords::commit(r, 0);
    }
    log.claim().seq = 11;  // never committed
  }  // closed by the destructor, as when an exception unwinds the run
  const auto bytes = itchbench::testing::read_bytes(path);
  ASSERT_EQ(bytes.size(), logfmt::kLatencyHeaderSize + 10 * sizeof(logfmt::LatencyRecord));
  const logfmt::Header h = header_of(bytes);
  EXPECT_EQ(h.flags & logfmt::kFlagFinalized, logfmt::kFlagFinalized);
  EXPECT_EQ(h.record_count, 10u);
  logfmt::LatencyRecord last;
  std::memcpy(&last, bytes.data() + logfmt::kLatencyHeaderSize + 9 * sizeof last, sizeof last);
  EXPECT_EQ(last.seq, 10u);
}

TEST(MmapLog, AFileThatCouldNotGrowIsNotTriedAgain) {
  // The file limited to two chunks (RLIMIT_FSIZE: the write past it fails with EFBIG, as one on a full disk fails
  // with ENOSPC); no provisioner, so the writer grows the file itself. Once a grow failed, every later claim is
  // dropped at once, without a write: with the limit lifted again, claims are still dropped.
  ScratchDir dir;
  struct rlimit was;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &was), 0);
  const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit two_chunks = was;
  two_chunks.rlim_cur = 2 * MmapLog::kChunkBytes;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &two_chunks), 0);
  MmapLog log(dir.file("limited"), logfmt::Kind::kBbo, 48, offsetof(logfmt::BboRecord, flags), {},
              8 * MmapLog::kChunkBytes, MmapLog::kNoLimit, false);
  const uint64_t fit = (2 * MmapLog::kChunkBytes - logfmt::kHeaderSize) / 48;
  for (uint64_t i = 0; i < fit + 10; ++i) log.next();
  ::setrlimit(RLIMIT_FSIZE, &was);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(log.records(), fit);
  EXPECT_EQ(log.dropped(), 10u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(log.next(), nullptr);
  EXPECT_EQ(log.dropped(), 110u);
  EXPECT_EQ(log.drop_reason(), std::string("growing the file failed: ") + std::strerror(EFBIG));
  log.close();
}

TEST(MmapLog, UnwritableDirectoryIsAClearError) {
  try {
    BboLog log("/nonexistent-dir/x.bbo", logfmt::Kind::kBbo, {});
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.bbo: open"), std::string::npos) << e.what();
  }
}

TEST(MmapLog, ProvisioningPausesForAQuarterOfTheTimeTheWriterNeedsToCatchUp) {
  using std::chrono::microseconds;
  using std::chrono::milliseconds;
  // 32 MiB ready at 1 byte/ns: 33,554,432 ns to reach the end, a quarter of it 8,388,608 ns (hand worked).
  EXPECT_EQ(MmapLog::provisioning_pause(32u << 20, 1.0).count(), 8388608);
  EXPECT_EQ(MmapLog::provisioning_pause(32u << 20, 0.0), milliseconds(10));     // an idle writer: the longest
  EXPECT_EQ(MmapLog::provisioning_pause(32u << 20, 0.5), milliseconds(10));     // 16.8 ms, capped
  EXPECT_EQ(MmapLog::provisioning_pause(32u << 20, 100.0), milliseconds(1));    // 84 us, floored
  EXPECT_EQ(MmapLog::provisioning_pause(0, 1.0), milliseconds(1));             // nothing ready: soonest
  EXPECT_GT(MmapLog::provisioning_pause(32u << 20, 3.0), microseconds(2700));   // the flood's 3 GB/s: 2.8 ms
}

TEST(MmapLog, ProvisioningKeepsTwentyMillisecondsOfWritingAheadWithinTwoToSixteenChunks) {
  const size_t chunk = 4u << 20;  // 4,194,304 bytes
  // 1 byte/ns for 20 ms: 20,000,000 bytes, 4.77 chunks, so 5 whole chunks (hand worked).
  EXPECT_EQ(MmapLog::provisioning_ahead(1.0, chunk), 5 * chunk);
  EXPECT_EQ(MmapLog::provisioning_ahead(0.0, chunk), 2 * chunk);    // idle: the least
  EXPECT_EQ(MmapLog::provisioning_ahead(0.1, chunk), 2 * chunk);    // 2 MB of writing: still the least
  EXPECT_EQ(MmapLog::provisioning_ahead(10.0, chunk), 16 * chunk);  // 200 MB: capped at 64 MiB
}

TEST(MmapLog, AnIdleLogsProvisionerWakesAtMostEveryTenMilliseconds) {
  // Where the provisioner shares the writer's CPU every wake-up preempts the writer: polled every millisecond,
  // 300 ms would cost ~300 of them. Sleeping can only make fewer: the bound cannot flake on a loaded machine.
  ScratchDir dir;
  BboLog log(dir.file("idle.bbo"), logfmt::Kind::kBbo, {});
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LE(double(log.provisioner_wakeups()), ms / 10 + 2);
  EXPECT_GE(log.provisioner_wakeups(), 1u);
  log.close();
}
