// bbo-shm-subscriber: a consumer of the gateway's shared-memory BBO ring, or
// of its depth ring (publish/shm_ring.hpp: the ring says which by its
// records' size). Stamps each event as it arrives and writes what
// a TCP subscriber writes (publish/subscriber_output.hpp), so reconciliation
// and hop tables take it as one; its OUT.json holds its slot, events read,
// events lost to overruns and how it ended.
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "publish/shm_ring.hpp"
#include "publish/subscriber_output.hpp"
#include "source/stop_flag.hpp"
#include "util/cli.hpp"
#include "util/realtime.hpp"

namespace {

// Spins (about 10 us) before each sched_yield while the ring is empty: an idle consumer reacts within a
// pause, and still leaves its CPU to whatever else is runnable there.
constexpr uint32_t kSpinsBeforeYield = 256;

void write_info(const itchbench::SubscriberOutput& out, const itchbench::shm::ShmConsumer& c,
                const std::string& ended) {
  out.write_info([&](itchbench::JsonWriter& j) {
    j.field("slot", uint64_t(c.slot())).field("pid", uint64_t(::getpid()));
    j.field("read", c.read()).field("overruns", c.overruns()).field("ended", ended);
  });
}

}  // namespace

int main(int argc, char** argv) {
  using namespace itchbench;
  cli::Args args("bbo-shm-subscriber", "bbo-shm-subscriber --name /NAME --out FILE [options]",
                 "A consumer of the gateway's shared-memory BBO ring (itch-gateway --publish-shm). Reads every\n"
                 "event until the gateway closes the ring, stamping each on arrival; writes FILE, FILE.recv\n"
                 "and FILE.json. Exit status: 0 the stream ended (or SIGTERM), 1 the ring could not be opened,\n"
                 "2 usage.");
  args.option("name", "/NAME", "the ring's POSIX shared-memory name");
  args.option("out", "FILE", "where the frames go (FILE.recv, FILE.json beside it)");
  args.option("mode", "MODE", "fast (spins), slow (sleeps 1 ms after each event) or stuck (attaches, never reads)",
              "fast");
  args.option("cpu", "N", "pin to this CPU");
  args.option("attach-timeout-ms", "MS", "how long to wait for the ring to exist", "10000");
  args.parse(argc, argv);
  if (!args.has("name") || !args.has("out")) args.fail("--name and --out are required");
  const std::string mode = args.get("mode");
  if (mode != "fast" && mode != "slow" && mode != "stuck") args.fail("--mode takes fast, slow or stuck");
  const std::string out = args.get("out");
  if (args.has("cpu")) {
    const std::string err = pin_current_thread(int(args.get_u64("cpu")));
    if (!err.empty()) {
      std::fprintf(stderr, "bbo-shm-subscriber: %s\n", err.c_str());
      return 2;
    }
  }
  install_stop_signal_handlers();

  std::unique_ptr<shm::ShmConsumer> ring;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(args.get_u64("attach-timeout-ms"));
  for (;;) {
    try {
      ring = std::make_unique<shm::ShmConsumer>(args.get("name"));
      break;
    } catch (const std::exception& e) {
      if (std::chrono::steady_clock::now() > deadline || stop_requested().load()) {
        std::fprintf(stderr, "bbo-shm-subscriber: %s\n", e.what());
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  std::unique_ptr<SubscriberOutput> output;
  try {
    const uint32_t bytes = ring->record_bytes();
    const bool depth = bytes == sizeof(logfmt::LevelChangeRecord);
    if (bytes != sizeof(logfmt::BboRecord) && !depth)
      throw std::runtime_error("the ring's records are " + std::to_string(bytes) + " bytes: neither a BBO record "
                               "nor a depth log's level change");
    output = std::make_unique<SubscriberOutput>(out, size_t(1) << 30, false, depth ? logfmt::kAllLevels : 0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bbo-shm-subscriber: %s\n", e.what());
    return 1;
  }
  write_info(*output, *ring, "");
  std::string ended = "signal";
  if (mode == "stuck") {
    while (!stop_requested().load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } else {
    std::vector<uint8_t> record(ring->record_bytes());
    uint32_t idle = 0;
    while (!stop_requested().load()) {
      const shm::ShmConsumer::Read got = ring->next(record.data());
      if (got == shm::ShmConsumer::Read::kEvent) {
        idle = 0;
        output->on_frame(record.data(), monotonic_ns());
        if (mode == "slow") std::this_thread::sleep_for(std::chrono::milliseconds(1));
      } else if (got == shm::ShmConsumer::Read::kEnd) {
        ended = "end of stream";
        break;
      } else if (++idle < kSpinsBeforeYield) {
        __builtin_ia32_pause();
      } else {
        sched_yield();  // on a machine with few CPUs the sender or the gateway may need this one
      }
    }
  }
  output->close();
  write_info(*output, *ring, ended);
  return 0;
}
