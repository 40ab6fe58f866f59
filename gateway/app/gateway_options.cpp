#include "app/gateway_options.hpp"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <cstdio>
#include <stdexcept>

#include "log/log_format.hpp"
#include "pipeline/stamps.hpp"
#include "source/feed_option.hpp"
#include "util/cli.hpp"
#include "util/json_writer.hpp"

namespace itchbench {

GatewayOptions parse_gateway_options(int argc, char** argv) {
  cli::Args args("itch-gateway", "itch-gateway --source sim|udp|af_xdp|serial --out DIR [options]",
                 "The gateway under test: ITCH 5.0 in, order book, BBO events out, latency and BBO\n"
                 "logs written to DIR (latency.lat, bbo.bbo, gateway.json).\n"
                 "  sim     a capture read in-process (pcap of MoldUDP64, or binary ITCH): no sockets,\n"
                 "          no sleeping, time is the capture's\n"
                 "  udp     MoldUDP64 datagrams on 127.0.0.1:PORT, kernel receive timestamps\n"
                 "  af_xdp  the same datagrams taken at the XDP hook of --interface (kernel bypass),\n"
                 "          stamped there; needs root (CAP_NET_ADMIN, CAP_BPF, CAP_NET_RAW)\n"
                 "  serial  ITCH lines (SERIAL_LINE.md) on a serial port or pty\n"
                 "Live sources publish BBO frames on TCP 127.0.0.1 and print 'LISTENING udp=.. tcp=..'\n"
                 "then 'READY' on stdout; they stop at the end of session, on SIGINT/SIGTERM or after\n"
                 "--idle-exit-ms without input, and always finalize their logs.\n"
                 "Exit status: 0 the input was processed (malformed messages are counted, not fatal),\n"
                 "1 the capture ended in an error, 2 usage, I/O or a real-time option not granted, 3 sim stopped by\n"
                 "SIGINT/SIGTERM before the capture's end (its logs finalized, gateway.json written).");
  args.option("source", "KIND", "sim, udp, af_xdp or serial", "sim");
  args.option("out", "DIR", "existing directory for the logs");
  args.option("run-id", "ID", "run identifier written into log headers", "");
  args.option("commit", "SHA", "commit identifier written into log headers", "");
  args.option("expected-orders", "N", "order index pre-sized for this many live orders (beyond them it grows, rehashing them all on the hot thread)", "1048576");
  args.flag("no-latency-log", "do not record per-message latency (no stage stamps are taken)");
  args.option("stamps", "LIST", "stages to stamp: all, or some of read,decoded,book,published (each a TSC read "
              "and a field of every latency record; live sources always stamp read)", "all");
  args.option("latency-format", "KIND", "compact (version 5: ~20 bytes a message, stamps as differences) or wide "
              "(version 4: 24 bytes and 8 a stamp)", "compact");
  args.flag("latency-histogram", "count each stage's time in a histogram (gateway.json latency_histogram: "
            "percentiles within 1/64) instead of writing the per-message latency log");
  args.option("levels", "N", "also log depth events (depth.dep): after a book message, a stock's top N price "
              "levels a side (1 to 64; 1 is the BBO), whenever any of them changed; all: each level the message "
              "changed, its new shares (a level change record); 0: none. Live: published too, "
              "each event as its depth.dep record, beside the BBO on every path the run uses (TCP on --depth-port, "
              "the ring NAME-depth, MQTT TOPIC/depth, Kafka TOPIC-depth)", "0");
  args.flag("progress", "sim: print progress to stderr every 2^20 datagrams (pcap) or messages (ITCH file)");
  args.option("capture", "FILE", "sim: the capture");
  args.option("feed", "ADDR:PORT", std::string("sim: ") + kFeedOptionHelp);
  args.option("port", "PORT", "udp: port to bind (0: any free); af_xdp: the feed's UDP port (required)");
  args.option("rcvbuf", "BYTES", "udp: receive buffer to request (past net.core.rmem_max as root)", "0");
  args.option("join", "GROUP", "udp: join this multicast group (224.0.0.0/4) on the loopback interface and bind "
              "0.0.0.0:PORT, so that unicast answers to this socket arrive too");
  args.option("feed-b", "ADDR:PORT", "udp: the session's B line (docs/exchange.md): a multicast group, taken on "
              "the --port socket's port, or 127.0.0.1:PORT; port 0: none. Copies are arbitrated: the first wins", "");
  args.option("rerequest", "ADDR:PORT", "udp: the exchange's MoldUDP64 re-request server, asked for the messages "
              "both lines lost; port 0: none", "");
  args.option("snapshot", "ADDR:PORT", "udp: join the feed mid-session (docs/snapshot.md): hold the live feed, take "
              "the book from this SoupBinTCP snapshot service (GLIMPSE 5.0), apply the feed from the number its End "
              "of Snapshot carries; port 0: start at the feed's first packet", "");
  args.option("snapshot-login", "USER:PASSWORD", "udp: the snapshot service's login", "itch:bench");
  args.option("line-wait-us", "US", "udp recovery: how long the other line has to fill a gap before it is asked "
              "for (or, with no server, given up)", "5000");
  args.option("request-timeout-ms", "MS", "udp recovery: a request unanswered this long is sent again; each "
              "further wait doubles, up to 16 times this", "20");
  args.option("max-requests", "N", "udp recovery: requests for one gap that bring nothing, before it is given up "
              "(counted lost)", "8");
  args.option("hold-packets", "N", "udp recovery: packets held past gaps at most (2 KiB each); when full the "
              "oldest gap is given up", "4096");
  args.flag("busy-poll", "udp, af_xdp: spin on a non-blocking receive (the ring) instead of waiting in epoll "
            "(poll); and the BBO publisher polls its ring every 50 us even when idle, instead of sleeping on a "
            "doorbell the hot path rings");
  args.option("interface", "NAME", "af_xdp: the interface whose XDP hook takes the feed", "lo");
  args.option("xdp-attach", "MODE", "af_xdp: auto, drv (native) or skb (generic); auto tries drv first", "auto");
  args.option("xdp-bind", "MODE", "af_xdp: auto, zerocopy or copy; auto tries zerocopy first", "auto");
  args.option("xdp-frames", "N", "af_xdp: UMEM frames of 4 KiB, a power of two", "4096");
  args.option("xdp-ring", "N", "af_xdp: receive ring entries, a power of two", "2048");
  args.option("xdp-batch", "N", "af_xdp: descriptors taken from the ring at a time", "64");
  args.flag("ignore-end-of-session", "udp: keep receiving after an end-of-session packet (looped replays)");
  args.option("device", "PATH", "serial: the serial port (a pty from socat)");
  args.option("baud", "N", "serial: baud rate set on the port", "115200");
  args.option("idle-exit-ms", "MS", "live: stop after this long without input, once input came", "3000");
  args.option("publish-port", "PORT", "live: TCP port for BBO subscribers (0: any free)", "0");
  args.option("depth-port", "PORT", "live, with --levels N: TCP port for depth subscribers (0: any free)", "0");
  args.option("subscriber-queue", "N", "live: frames queued per subscriber before it counts as slow", "8192");
  args.option("slow-subscriber", "drop|disconnect", "live: what a full subscriber queue does", "drop");
  args.option("wait-subscribers", "N", "live: wait (10 s at most) for N subscribers before READY", "0");
  args.option("wait-depth-subscribers", "N", "live, with --levels N: wait (10 s at most) for N depth subscribers "
              "before READY", "0");
  args.option("publish-shm", "/NAME", "live: also publish BBO frames into a shared-memory ring of this name "
              "(POSIX shm, removed at exit; docs/shm-ring.md)", "");
  args.option("shm-capacity", "N", "live: ring entries (64 bytes each), a power of two", "65536");
  args.option("shm-policy", "overrun|wait", "live: a consumer a whole ring behind loses events (overrun, "
              "counted) or holds the producer up (wait)", "overrun");
  args.option("wait-shm-subscribers", "N", "live: wait (10 s at most) for N ring consumers before READY", "0");
  args.option("wait-depth-shm-subscribers", "N", "live, with --publish-shm NAME and --levels: wait (10 s at most) "
              "for N consumers of the depth ring (NAME-depth) before READY", "0");
  args.option("publish-mqtt", "ADDR:PORT", "live: also publish each BBO frame as an MQTT message to this broker", "");
  args.option("mqtt-topic", "TOPIC", "live: the MQTT topic (its end marker: TOPIC/end)", "itchbench/bbo");
  args.option("mqtt-qos", "N", "live: MQTT QoS 0, 1 or 2", "1");
  args.option("publish-kafka", "ADDR:PORT", "live: also produce each BBO frame as a Kafka record to this broker", "");
  args.option("kafka-topic", "TOPIC", "live: the Kafka topic (partition 0; its end marker: key \"end\")",
              "itchbench-bbo");
  args.option("kafka-acks", "0|1|all", "live: Kafka producer acks", "1");
  args.option("kafka-linger-ms", "MS", "live: Kafka producer linger.ms", "0");
  args.option("kafka-batch", "N", "live: Kafka producer batch.num.messages", "10000");
  args.option("cpu", "N", "pin the receive (hot path) thread to this CPU");
  args.option("publisher-cpu", "N", "pin the publisher thread to this CPU");
  args.option("sched-fifo", "PRIO", "run the receive thread SCHED_FIFO at this priority (1-99)");
  args.flag("mlockall", "lock the process's memory (pages locked as they are touched)");
  args.flag("build-info", "print how this binary was built (JSON) and exit");
  args.parse(argc, argv);

  if (args.flag_set("build-info")) {
    JsonWriter j;
    j.begin_object();
    j.field("build_type", ITCHBENCH_BUILD_TYPE).field("cxx_flags", ITCHBENCH_CXX_FLAGS);
    j.field("compiler", ITCHBENCH_COMPILER);
    // The message path's stages whose code is inlined into Gateway::on_message, so that no function of theirs
    // counts them apart (`itchbench compare` reports them not comparable): decoding since it was inlined for
    // 1.04x, the book's operations since order_book_ops.hpp (1.049x).
    j.key("inlined_stages").begin_array();
    for (const char* stage : {"decode", "book"}) j.value(stage);
    j.end_array();
    j.end_object();
    std::fputs(j.str().c_str(), stdout);
    std::exit(0);
  }

  GatewayOptions o;
  o.source = args.get("source");
  if (o.source != "sim" && o.source != "udp" && o.source != "af_xdp" && o.source != "serial")
    args.fail("--source takes sim, udp, af_xdp or serial");
  if (!args.has("out")) args.fail("--out is required");
  o.out = args.get("out");
  struct stat st {};
  if (::stat(o.out.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) args.fail("--out: " + o.out + " is not a directory");
  o.run_id = args.get("run-id");
  o.commit = args.get("commit");
  o.expected_orders = args.get_u64("expected-orders");
  if (!logfmt::parse_depth_levels(args.get("levels"), o.levels))
    args.fail("--levels " + args.get("levels") + ": 0 to " + std::to_string(logfmt::kMaxDepthLevels) +
              " levels a side, or all");
  o.latency_histogram = args.flag_set("latency-histogram");
  if (o.latency_histogram && args.flag_set("no-latency-log"))
    args.fail("--latency-histogram records the stage times; --no-latency-log takes no stamps: choose one");
  if (o.latency_histogram && args.has("latency-format"))
    args.fail("--latency-format is the per-message log's; --latency-histogram writes none");
  o.latency_log = !args.flag_set("no-latency-log") && !o.latency_histogram;
  try {
    o.stamps = parse_stamps(args.get("stamps"));
  } catch (const std::invalid_argument& e) {
    args.fail(std::string("--") + e.what());
  }
  const std::string format = args.get("latency-format");
  if (format != "compact" && format != "wide") args.fail("--latency-format must be compact or wide, not '" + format + "'");
  o.latency_format = format == "compact" ? LatencyFormat::kCompact : LatencyFormat::kWide;
  o.progress = args.flag_set("progress");
  if (args.has("port")) {
    const uint64_t p = args.get_u64("port");
    if (p > 65535) args.fail("--port must be 0..65535");
    o.port = uint16_t(p);
  }
  if (o.source == "sim") {
    if (!args.has("capture")) args.fail("--capture is required with --source sim");
    o.capture = args.get("capture");
    if (o.port) args.fail("--port is the udp source's bind port; in simulation --feed ADDR:PORT picks the flow");
  }
  o.feed = feed_option(args);
  if (o.feed && o.source != "sim") args.fail("--feed applies to --source sim (a live source reads one socket or port)");
  o.rcvbuf_bytes = int(args.get_u64("rcvbuf"));
  if (args.has("join")) {
    if (o.source != "udp") args.fail("--join applies to --source udp");
    in_addr group{};
    if (inet_pton(AF_INET, args.get("join").c_str(), &group) != 1 || (ntohl(group.s_addr) >> 28) != 0xE)
      args.fail("--join takes a multicast group (224.0.0.0/4)");
    o.join_group = args.get("join");
  }
  // "ADDR:PORT" with port 0 (a contract's placeholders for a line or server the run has not) means none.
  auto endpoint = [&](const std::string& name, std::string& addr, uint16_t& port, bool multicast_ok) {
    const std::string v = args.get(name);
    if (v.empty()) return;
    const size_t colon = v.rfind(':');
    in_addr a{};
    uint64_t p = 0;
    try {
      p = colon == std::string::npos ? 65536 : std::stoull(v.substr(colon + 1));
    } catch (const std::exception&) {
      p = 65536;
    }
    if (p > 65535) args.fail("--" + name + " takes ADDR:PORT, not '" + v + "'");
    if (p == 0) return;
    addr = v.substr(0, colon);
    port = uint16_t(p);
    if (inet_pton(AF_INET, addr.c_str(), &a) != 1) args.fail("--" + name + ": '" + addr + "' is not an IPv4 address");
    if (!multicast_ok && (ntohl(a.s_addr) >> 28) == 0xE) args.fail("--" + name + " takes a unicast address");
    if (o.source != "udp") args.fail("--" + name + " applies to --source udp");
  };
  std::string b_addr;
  uint16_t b_port = 0;
  endpoint("feed-b", b_addr, b_port, true);
  if (b_port) {
    in_addr a{};
    inet_pton(AF_INET, b_addr.c_str(), &a);
    const bool b_multicast = (ntohl(a.s_addr) >> 28) == 0xE;
    if (b_multicast != !o.join_group.empty())
      args.fail("--feed-b is a multicast group exactly when --join is (both lines alike)");
    if (b_multicast) {
      if (b_addr == o.join_group) args.fail("--feed-b's group must differ from --join's");
      if (b_port != o.port.value_or(0)) args.fail("--feed-b's group is taken on the --port socket's port");
      o.join_group_b = b_addr;
    } else {
      o.port_b = b_port;
    }
  }
  endpoint("rerequest", o.rerequest_addr, o.rerequest_port, false);
  endpoint("snapshot", o.snapshot_addr, o.snapshot_port, false);
  {
    const std::string login = args.get("snapshot-login");
    const size_t colon = login.find(':');
    if (colon == std::string::npos || colon > 6 || login.size() - colon - 1 > 10)
      args.fail("--snapshot-login takes USER:PASSWORD (6 and 10 characters at most)");
    o.snapshot_user = login.substr(0, colon);
    o.snapshot_password = login.substr(colon + 1);
  }
  o.line_wait_us = args.get_u64("line-wait-us");
  o.request_timeout_ms = args.get_u64("request-timeout-ms");
  if (o.request_timeout_ms == 0) args.fail("--request-timeout-ms must be at least 1");
  o.max_requests = uint32_t(args.get_u64("max-requests"));
  o.hold_packets = uint32_t(args.get_u64("hold-packets"));
  if (o.hold_packets == 0 || o.hold_packets > (1u << 20)) args.fail("--hold-packets must be 1..1048576");
  o.busy_poll = args.flag_set("busy-poll");
  o.interface = args.get("interface");
  o.xdp_attach = args.get("xdp-attach");
  o.xdp_bind = args.get("xdp-bind");
  if (o.xdp_attach != "auto" && o.xdp_attach != "drv" && o.xdp_attach != "skb")
    args.fail("--xdp-attach takes auto, drv or skb");
  if (o.xdp_bind != "auto" && o.xdp_bind != "zerocopy" && o.xdp_bind != "copy")
    args.fail("--xdp-bind takes auto, zerocopy or copy");
  o.xdp_frames = uint32_t(args.get_u64("xdp-frames"));
  o.xdp_ring = uint32_t(args.get_u64("xdp-ring"));
  o.xdp_batch = uint32_t(args.get_u64("xdp-batch"));
  if (o.xdp_batch == 0) args.fail("--xdp-batch must be at least 1");
  if (o.source == "af_xdp" && !o.port.value_or(0)) args.fail("--port (the feed's UDP port) is required with af_xdp");
  o.ignore_end_of_session = args.flag_set("ignore-end-of-session");
  if (o.source == "serial") {
    if (!args.has("device")) args.fail("--device is required with --source serial");
    o.device = args.get("device");
  }
  o.baud = unsigned(args.get_u64("baud"));
  o.idle_exit_ms = args.get_u64("idle-exit-ms");
  const uint64_t pp = args.get_u64("publish-port");
  if (pp > 65535) args.fail("--publish-port must be 0..65535");
  o.publish_port = uint16_t(pp);
  const uint64_t dp = args.get_u64("depth-port");
  if (dp > 65535) args.fail("--depth-port must be 0..65535");
  o.depth_port = uint16_t(dp);
  o.subscriber_queue = args.get_u64("subscriber-queue");
  if (o.subscriber_queue == 0) args.fail("--subscriber-queue must be at least 1");
  const std::string slow = args.get("slow-subscriber");
  if (slow != "drop" && slow != "disconnect") args.fail("--slow-subscriber takes drop or disconnect");
  o.disconnect_slow = slow == "disconnect";
  o.wait_subscribers = args.get_u64("wait-subscribers");
  o.wait_depth_subscribers = args.get_u64("wait-depth-subscribers");
  o.shm_name = args.get("publish-shm");
  o.shm_capacity = args.get_u64("shm-capacity");
  if (o.shm_capacity < 2 || o.shm_capacity > (uint64_t(1) << 26) || (o.shm_capacity & (o.shm_capacity - 1)))
    args.fail("--shm-capacity must be a power of two from 2 to 2^26");
  const std::string shm_policy = args.get("shm-policy");
  if (shm_policy != "overrun" && shm_policy != "wait") args.fail("--shm-policy takes overrun or wait");
  o.shm_wait = shm_policy == "wait";
  o.wait_shm_subscribers = args.get_u64("wait-shm-subscribers");
  if (o.wait_shm_subscribers && o.shm_name.empty()) args.fail("--wait-shm-subscribers needs --publish-shm");
  o.wait_depth_shm_subscribers = args.get_u64("wait-depth-shm-subscribers");
  if (o.wait_depth_shm_subscribers && (o.shm_name.empty() || !o.levels))
    args.fail("--wait-depth-shm-subscribers needs --publish-shm and --levels");
  if (!o.shm_name.empty() && o.source == "sim") args.fail("--publish-shm applies to live sources");
  const std::string mqtt = args.get("publish-mqtt");
  if (!mqtt.empty()) {
    const size_t colon = mqtt.rfind(':');
    if (colon == std::string::npos || colon == 0) args.fail("--publish-mqtt takes ADDR:PORT");
    o.mqtt_host = mqtt.substr(0, colon);
    try {
      const unsigned long port = std::stoul(mqtt.substr(colon + 1));
      if (port == 0 || port > 65535) throw std::out_of_range("port");
      o.mqtt_port = uint16_t(port);
    } catch (const std::exception&) {
      args.fail("--publish-mqtt: " + mqtt.substr(colon + 1) + " is not a port");
    }
    if (o.source == "sim") args.fail("--publish-mqtt applies to live sources");
  }
  o.kafka_brokers = args.get("publish-kafka");
  if (!o.kafka_brokers.empty() && o.source == "sim") args.fail("--publish-kafka applies to live sources");
  o.kafka_topic = args.get("kafka-topic");
  o.kafka_acks = args.get("kafka-acks");
  if (o.kafka_acks != "0" && o.kafka_acks != "1" && o.kafka_acks != "all") args.fail("--kafka-acks takes 0, 1 or all");
  o.kafka_linger_ms = args.get_u64("kafka-linger-ms");
  o.kafka_batch = args.get_u64("kafka-batch");
  if (o.kafka_batch == 0) args.fail("--kafka-batch must be at least 1");
  o.mqtt_topic = args.get("mqtt-topic");
  o.mqtt_qos = int(args.get_u64("mqtt-qos"));
  if (o.mqtt_qos > 2) args.fail("--mqtt-qos takes 0, 1 or 2");
  if (args.has("cpu")) o.cpu = int(args.get_u64("cpu"));
  if (args.has("publisher-cpu")) o.publisher_cpu = int(args.get_u64("publisher-cpu"));
  if (args.has("sched-fifo")) {
    o.sched_fifo = int(args.get_u64("sched-fifo"));
    if (o.sched_fifo < 1 || o.sched_fifo > 99) args.fail("--sched-fifo takes a priority from 1 to 99");
  }
  o.mlockall = args.flag_set("mlockall");
  if (o.source == "sim" && (o.publisher_cpu >= 0 || o.sched_fifo > 0 || o.mlockall))
    args.fail("--publisher-cpu, --sched-fifo and --mlockall apply to live sources; simulation has no publisher "
              "thread and no receive wait (--cpu pins it)");
  return o;
}

}  // namespace itchbench
