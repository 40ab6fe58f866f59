// itch-gateway's command line, parsed once for every source.
#pragma once
#include <cstdint>
#include <optional>

#include "log/latency_log.hpp"
#include "pipeline/stamps.hpp"
#include "source/feed.hpp"
#include <string>

namespace itchbench {

struct GatewayOptions {
  std::string source = "sim";  // sim | udp | af_xdp | serial
  std::string out;
  std::string run_id, commit;
  // Live orders the order index is sized for before the first message. Past it the index grows on the hot
  // thread, rehashing every live order: on deep-book 3 M grown from 64 k the two largest grows held a message
  // 47 and 132 ms. 1 M: 2 M slots of 16 bytes, 32 MiB zeroed at start.
  uint64_t expected_orders = uint64_t(1) << 20;
  uint32_t levels = 0;  // depth events of the top N levels a side, logged to depth.dep (live: published too); 0: none;
                       // logfmt::kAllLevels: every level's changes
  bool latency_log = true;         // the per-message latency log (latency.lat)
  bool latency_histogram = false;  // per-stage histograms in gateway.json instead of the log
  uint8_t stamps = kAllStamps;  // stages to stamp (pipeline/stamps.hpp)
  LatencyFormat latency_format = LatencyFormat::kCompact;
  bool progress = false;
  // sim
  std::string capture;
  std::optional<uint16_t> port;  // udp: bind port
  std::optional<Feed> feed;      // sim: the capture's feed (default: chosen by census)
  // udp
  int rcvbuf_bytes = 0;
  std::string join_group;  // udp: a multicast group to join (on lo); "": unicast
  // udp recovery (docs/exchange.md): the B line (its group on port, or 127.0.0.1:port_b) and the re-request server
  std::string join_group_b;
  uint16_t port_b = 0;
  std::string rerequest_addr;
  uint16_t rerequest_port = 0;
  uint64_t line_wait_us = 5000;
  uint64_t request_timeout_ms = 20;
  uint32_t max_requests = 8;
  uint32_t hold_packets = 4096;
  // a late join (docs/snapshot.md): the snapshot service, its login
  std::string snapshot_addr;
  uint16_t snapshot_port = 0;
  std::string snapshot_user = "itch", snapshot_password = "bench";
  bool recovering() const { return !join_group_b.empty() || port_b || rerequest_port || snapshot_port; }
  bool busy_poll = false;
  bool ignore_end_of_session = false;
  // af_xdp (with port, rcvbuf aside, busy_poll and ignore_end_of_session of udp)
  std::string interface = "lo";
  std::string xdp_attach = "auto", xdp_bind = "auto";
  uint32_t xdp_frames = 4096, xdp_ring = 2048, xdp_batch = 64;
  // serial
  std::string device;
  unsigned baud = 115200;
  // live
  uint64_t idle_exit_ms = 3000;
  uint16_t publish_port = 0;
  uint16_t depth_port = 0;  // with levels: the depth publisher's (0: any free)
  uint64_t subscriber_queue = 8192;
  bool disconnect_slow = false;
  uint64_t wait_subscribers = 0;
  uint64_t wait_depth_subscribers = 0;
  uint64_t wait_depth_shm_subscribers = 0;
  std::string shm_name;           // "": no shared-memory ring
  uint64_t shm_capacity = 65536;
  bool shm_wait = false;          // policy: wait for the slowest consumer (else overrun it)
  uint64_t wait_shm_subscribers = 0;
  std::string mqtt_host;          // "": no MQTT publishing
  uint16_t mqtt_port = 0;
  std::string mqtt_topic = "itchbench/bbo";
  int mqtt_qos = 1;
  std::string kafka_brokers;      // "": no Kafka producing
  std::string kafka_topic = "itchbench-bbo";
  std::string kafka_acks = "1";
  uint64_t kafka_linger_ms = 0;
  uint64_t kafka_batch = 10000;
  // real time
  int cpu = -1;
  int publisher_cpu = -1;
  int sched_fifo = 0;
  bool mlockall = false;
};

// Parses argv; exits 0 after --help / --build-info, 2 on bad arguments.
GatewayOptions parse_gateway_options(int argc, char** argv);

}  // namespace itchbench
