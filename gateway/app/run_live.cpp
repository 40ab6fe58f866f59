// Live sources: UDP and AF_XDP (tcpreplay or udp-replay), serial
// (serial-replay through socat), with the TCP BBO publisher and the
// real-time options.
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "app/gateway_report.hpp"
#include "app/run_common.hpp"
#include "app/runs.hpp"
#include "pipeline/gap_recovery.hpp"
#include "publish/bbo_fan_out.hpp"
#include "publish/tcp_publisher.hpp"
#include "source/serial_source.hpp"
#include "source/snapshot_fetch.hpp"
#include "source/stop_flag.hpp"
#include "source/udp_source.hpp"
#include "source/xdp_source.hpp"
#include "util/atomic_file.hpp"
#include "util/realtime.hpp"

namespace itchbench {

namespace {

// A TCP publisher's counters and its subscribers' shares (gateway.json "publisher", "depth_publisher").
void write_publisher_json(JsonWriter& j, const char* name, const TcpPublisher& publisher, const GatewayOptions& o) {
  const PublisherCounters& pc = publisher.counters();
  j.key(name).begin_object();
  j.field("port", uint64_t(publisher.port())).field("published", pc.published).field("ring_dropped", pc.ring_dropped);
  j.field("accepted", pc.accepted.load()).field("disconnected", pc.disconnected.load());
  j.field("slow_disconnects", pc.slow_disconnects.load()).field("frames_sent", pc.frames_sent.load());
  j.field("frames_dropped", pc.frames_dropped.load());
  j.field("policy", o.disconnect_slow ? "disconnect" : "drop").field("subscriber_queue", o.subscriber_queue);
  j.field("wait", o.busy_poll ? "poll" : "doorbell").field("parks", pc.parks.load());
  j.field("doorbell_rings", publisher.doorbell_rings()).field("missed_bells", pc.missed_bells.load());
  j.key("subscribers").begin_array();
  for (const SubscriberReport& r : publisher.subscriber_reports()) {
    j.begin_object();
    j.field("peer_port", uint64_t(r.peer_port)).field("frames_sent", r.frames_sent);
    j.field("frames_dropped", r.frames_dropped).field("closed_by", r.closed_by);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

// A broker publisher's counters (gateway.json "mqtt", "depth_mqtt"; "kafka", "depth_kafka").
void write_mqtt_json(JsonWriter& j, const char* name, const MqttPublisher& m) {
  const MqttOptions& mo = m.options();
  const MqttCounters& mc = m.counters();
  j.key(name).begin_object();
  j.field("broker", mo.host + ":" + std::to_string(mo.port)).field("topic", mo.topic);
  j.field("qos", uint64_t(mo.qos)).field("published", m.published()).field("ring_dropped", m.ring_dropped());
  j.field("sent", mc.sent.load()).field("errors", mc.errors.load()).field("acked", mc.acked.load());
  j.end_object();
}

void write_kafka_json(JsonWriter& j, const char* name, const KafkaPublisher& k) {
  const KafkaOptions& ko = k.options();
  const KafkaCounters& kc = k.counters();
  j.key(name).begin_object();
  j.field("brokers", ko.brokers).field("topic", ko.topic).field("acks", ko.acks);
  j.field("linger_ms", ko.linger_ms).field("batch", ko.batch_messages);
  j.field("published", k.published()).field("ring_dropped", k.ring_dropped());
  j.field("sent", kc.produced.load());
  j.field("errors", kc.errors.load()).field("acked", kc.delivered.load()).field("failed", kc.failed.load());
  j.end_object();
}

}  // namespace

int run_live(const GatewayOptions& o) {
  install_stop_signal_handlers();
  const StageClock clock = StageClock::calibrate();
  const bool udp = o.source == "udp";
  const bool xdp = o.source == "af_xdp";
  const bool datagrams = udp || xdp;  // MoldUDP64 packets, each with the kernel's (or the XDP hook's) stamp

  // Real-time options first, on this (the receive) thread; a request that
  // is not granted is an error, never a silent downgrade.
  Grant mlock{o.mlockall, o.mlockall ? lock_all_memory() : ""};
  Grant pin{o.cpu >= 0, o.cpu >= 0 ? pin_current_thread(o.cpu) : ""};
  Grant fifo{o.sched_fifo > 0, o.sched_fifo > 0 ? set_sched_fifo(o.sched_fifo) : ""};
  // The publishers pin themselves on their own threads; a CPU the process may not use is refused here, with the
  // rest (it had been recorded as not granted while the run went on and passed).
  Grant publisher_cpu{o.publisher_cpu >= 0, o.publisher_cpu >= 0 ? cpu_unavailable(o.publisher_cpu) : ""};
  int64_t rt_runtime_us = -1, rt_period_us = -1;
  const bool throttled = rt_throttling(rt_runtime_us, rt_period_us);
  const bool rt_yield = o.busy_poll && fifo.requested && fifo.error.empty() && throttled;
  for (const Grant* g : {&mlock, &pin, &fifo, &publisher_cpu})
    if (!g->error.empty()) {
      std::fprintf(stderr, "itch-gateway: %s\n", g->error.c_str());
      return 2;
    }

  // Live sources always stamp the read; UDP and AF_XDP also have the kernel's receive stamp.
  RunLogs logs = open_run_logs(o, clock, datagrams ? logfmt::OriginClock::kNone : logfmt::OriginClock::kSenderMonotonic,
                               uint8_t(o.stamps | kStampRead | (datagrams ? logfmt::kStageKernel : 0)));
  OrderBook book(o.expected_orders);
  PublisherOptions po;
  po.port = o.publish_port;
  po.subscriber_queue = o.subscriber_queue;
  po.policy = o.disconnect_slow ? SlowSubscriberPolicy::kDisconnect : SlowSubscriberPolicy::kDrop;
  po.cpu = o.publisher_cpu;
  po.park_when_idle = !o.busy_poll;  // busy polling asked for: the publisher keeps polling too
  TcpPublisher publisher(po);
  // Depth (--levels N): each depth event, as its depth log record, to subscribers on a port of its own.
  std::unique_ptr<TcpPublisher> depth_publisher;
  if (o.levels > 0) {
    PublisherOptions dpo = po;
    dpo.port = o.depth_port;
    dpo.frame_bytes = sizeof(logfmt::LevelChangeRecord);
    dpo.thread_name = "depth-publisher";
    depth_publisher = std::make_unique<TcpPublisher>(dpo);
  }
  std::unique_ptr<shm::ShmPublisher> ring;
  if (!o.shm_name.empty())
    ring = std::make_unique<shm::ShmPublisher>(o.shm_name, uint32_t(o.shm_capacity),
                                               o.shm_wait ? shm::Policy::kWait : shm::Policy::kOverrun);
  std::unique_ptr<shm::ShmPublisher> depth_ring;
  if (!o.shm_name.empty() && o.levels > 0)
    depth_ring = std::make_unique<shm::ShmPublisher>(o.shm_name + "-depth", uint32_t(o.shm_capacity),
                                                     o.shm_wait ? shm::Policy::kWait : shm::Policy::kOverrun,
                                                     uint32_t(sizeof(logfmt::LevelChangeRecord)));
  std::unique_ptr<MqttPublisher> mqtt;
  if (!o.mqtt_host.empty()) {
    MqttOptions mo;
    mo.host = o.mqtt_host;
    mo.port = o.mqtt_port;
    mo.topic = o.mqtt_topic;
    mo.qos = o.mqtt_qos;
    mqtt = std::make_unique<MqttPublisher>(mo);
  }
  std::unique_ptr<MqttPublisher> depth_mqtt;
  if (!o.mqtt_host.empty() && o.levels > 0) {
    MqttOptions mo = mqtt->options();
    mo.topic += "/depth";
    mo.frame_bytes = sizeof(logfmt::LevelChangeRecord);
    mo.thread_name = "depth-mqtt";
    depth_mqtt = std::make_unique<MqttPublisher>(mo);
  }
  std::unique_ptr<KafkaPublisher> kafka;
  if (!o.kafka_brokers.empty()) {
    KafkaOptions ko;
    ko.brokers = o.kafka_brokers;
    ko.topic = o.kafka_topic;
    ko.acks = o.kafka_acks;
    ko.linger_ms = o.kafka_linger_ms;
    ko.batch_messages = o.kafka_batch;
    kafka = std::make_unique<KafkaPublisher>(ko);
  }
  std::unique_ptr<KafkaPublisher> depth_kafka;
  if (!o.kafka_brokers.empty() && o.levels > 0) {
    KafkaOptions ko = kafka->options();
    ko.topic += "-depth";  // a Kafka topic name has no '/'
    ko.frame_bytes = sizeof(logfmt::LevelChangeRecord);
    ko.thread_name = "depth-kafka";
    depth_kafka = std::make_unique<KafkaPublisher>(ko);
  }
  BboFanOut fan_out(publisher, ring.get(), mqtt.get(), kafka.get(),
                    DepthPublishers{depth_publisher.get(), depth_ring.get(), depth_mqtt.get(), depth_kafka.get()});
  Gateway<BboFanOut> gw(book, clock, logs.latency.get(), logs.bbo.get(), fan_out, logs.histograms.get());
  DepthEvents depth(o.levels);
  depth.attach(gw, logs.depth.get());  // logged, and published by the depth publishers
  const double overhead = timer_overhead_ns(clock);
  const bool timed = o.latency_log || o.latency_histogram;

  std::unique_ptr<UdpSource> udp_source;
  std::unique_ptr<XdpSource> xdp_source;
  std::unique_ptr<SerialSource> serial_source;
  if (xdp) {
    XdpSourceOptions xo;
    xo.interface = o.interface;
    xo.port = o.port.value_or(0);
    xo.attach = o.xdp_attach;
    xo.bind = o.xdp_bind;
    xo.frames = o.xdp_frames;
    xo.ring = o.xdp_ring;
    xo.batch = o.xdp_batch;
    xo.busy_poll = o.busy_poll;
    xo.rt_yield = rt_yield;
    xo.idle_exit_ms = o.idle_exit_ms;
    xdp_source = std::make_unique<XdpSource>(xo);
  } else if (udp) {
    UdpSourceOptions uo;
    uo.port = o.port.value_or(0);
    uo.rcvbuf_bytes = o.rcvbuf_bytes;
    uo.join_group = o.join_group;
    uo.join_group_b = o.join_group_b;
    uo.port_b = o.port_b;
    uo.rerequest_addr = o.rerequest_addr;
    uo.rerequest_port = o.rerequest_port;
    uo.busy_poll = o.busy_poll;
    uo.rt_yield = rt_yield;
    uo.idle_exit_ms = o.idle_exit_ms;
    udp_source = std::make_unique<UdpSource>(uo);
  } else {
    serial_source = std::make_unique<SerialSource>(SerialSourceOptions{o.device, o.baud, o.idle_exit_ms});
  }
  publisher.start();
  if (depth_publisher) depth_publisher->start();
  for (MqttPublisher* m : {mqtt.get(), depth_mqtt.get()})
    if (m) m->start();
  for (KafkaPublisher* k : {kafka.get(), depth_kafka.get()})
    if (k) k->start();
  const unsigned feed_port = udp ? udp_source->port() : xdp ? xdp_source->port() : 0u;
  std::printf("LISTENING udp=%u tcp=%u%s%s%s\n", feed_port, unsigned(publisher.port()), ring ? " shm=" : "",
              ring ? o.shm_name.c_str() : "",
              depth_publisher ? (" depth=" + std::to_string(depth_publisher->port())).c_str() : "");
  std::fflush(stdout);
  if (o.wait_subscribers && !publisher.wait_for_subscribers(o.wait_subscribers, 10000)) {
    std::fprintf(stderr, "itch-gateway: %llu subscribers did not connect within 10 s\n",
                 (unsigned long long)o.wait_subscribers);
    publisher.stop(0);
    logs.close();
    return 2;
  }
  if (o.wait_depth_subscribers &&
      !(depth_publisher && depth_publisher->wait_for_subscribers(o.wait_depth_subscribers, 10000))) {
    std::fprintf(stderr, "itch-gateway: %llu depth subscribers did not connect within 10 s%s\n",
                 (unsigned long long)o.wait_depth_subscribers, depth_publisher ? "" : " (no --levels: no depth)");
    publisher.stop(0);
    logs.close();
    return 2;
  }
  const struct {
    shm::ShmPublisher* ring;
    uint64_t wanted;
    const char* what;
  } rings[] = {{ring.get(), o.wait_shm_subscribers, "ring"},
               {depth_ring.get(), o.wait_depth_shm_subscribers, "depth ring"}};
  for (const auto& r : rings) {
    if (!r.ring || !r.wanted) continue;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (r.ring->consumers() < r.wanted && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (r.ring->consumers() < r.wanted) {
      std::fprintf(stderr, "itch-gateway: %llu %s consumers did not attach within 10 s\n",
                   (unsigned long long)r.wanted, r.what);
      publisher.stop(0);
      logs.close();
      return 2;
    }
  }
  std::printf("READY\n");
  std::fflush(stdout);

  // With a B line or a re-request server, packets reach the framer through the recovery stage, in sequence order.
  std::unique_ptr<GapRecovery> recovery;
  if (udp && o.recovering()) {
    RecoveryOptions ro;
    ro.server = o.rerequest_port != 0;
    ro.line_b = udp_source->has_line_b();
    ro.line_wait_ns = o.line_wait_us * 1000;
    ro.request_timeout_ns = o.request_timeout_ms * 1000000;
    ro.max_requests = o.max_requests;
    ro.hold_packets = o.hold_packets;
    ro.join = o.snapshot_port != 0;
    recovery = std::make_unique<GapRecovery>(ro);
  }
  // A late join: the snapshot is taken on a thread of its own from READY on; the receive thread holds the feed.
  std::unique_ptr<SnapshotFetch> snapshot;
  uint64_t joined_ns = 0;
  struct RecoverySink {
    Gateway<BboFanOut>& gw;
    UdpSource& source;
    bool timed;
    void packet(const mold::Packet& pkt, const logfmt::Arrival& a) { gw.on_packet(pkt, timed ? a : logfmt::Arrival{}); }
    void malformed(const uint8_t* p, size_t n, const logfmt::Arrival& a) {
      gw.on_datagram(p, n, timed ? a : logfmt::Arrival{});
    }
    bool request(const mold::Request& r) {
      uint8_t bytes[mold::kRequestLength];
      mold::write_request(r, bytes);
      return source.send_request(bytes, sizeof bytes);
    }
  };
  if (recovery && recovery->joining()) {
    SnapshotFetchOptions so;
    so.addr = o.snapshot_addr;
    so.port = o.snapshot_port;
    so.username = o.snapshot_user;
    so.password = o.snapshot_password;
    snapshot = std::make_unique<SnapshotFetch>(so);
  }
  // Once the snapshot is complete: its book, then the feed from its number. False when it could not be had.
  auto join_when_ready = [&](RecoverySink& sink) {
    if (!snapshot || !recovery->joining() || !snapshot->done()) return true;
    const SnapshotResult& r = snapshot->result();
    if (!r.ok) return false;
    for (const auto& m : r.messages) gw.apply_snapshot(m.data(), m.size());
    gw.finish_snapshot(r.next_sequence, r.timestamp);
    recovery->start_at(r.next_sequence, sink);
    joined_ns = monotonic_ns();
    return true;
  };
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t received = 0;
  if (datagrams) {
    // With two lines the end of session on one is not the end of the other's copies, on their way behind it:
    // they are read (and counted) until the other line ends too, for a second at most.
    std::chrono::steady_clock::time_point ended{};
    auto session_goes_on = [&] {
      if (o.ignore_end_of_session || gw.framer().counters().end_of_session == 0) return true;
      if (!recovery || recovery->every_line_ended()) return false;
      const auto now = std::chrono::steady_clock::now();
      if (ended == std::chrono::steady_clock::time_point{}) ended = now;
      return now - ended < std::chrono::seconds(1);
    };
    auto on_datagram = [&](const uint8_t* p, size_t n, const logfmt::Arrival& arrival) {
      gw.on_datagram(p, n, timed ? arrival : logfmt::Arrival{});
      fan_out.after_input();
      return session_goes_on();
    };
    if (xdp) {
      xdp_source->run(clock, on_datagram);
    } else if (recovery) {
      RecoverySink sink{gw, *udp_source, timed};
      udp_source->run(
          clock,
          [&](const uint8_t* p, size_t n, Line line, const logfmt::Arrival& arrival) {
            recovery->on_datagram(p, n, line, arrival, sink);
            fan_out.after_input();
            return session_goes_on();
          },
          [&] {
            if (!join_when_ready(sink)) return false;
            if (recovery->gaps_open()) recovery->poll(recovery->now_ns(), sink);
            fan_out.after_input();
            return session_goes_on();
          });
    } else {
      udp_source->run(clock, [&](const uint8_t* p, size_t n, Line, const logfmt::Arrival& arrival) {
        return on_datagram(p, n, arrival);
      });
    }
    received = gw.framer().counters().messages;
  } else {
    serial_source->run(clock, [&](uint64_t seq, const uint8_t* m, size_t n, const logfmt::Arrival& arrival) {
      gw.on_message(seq, m, n, timed ? arrival : logfmt::Arrival{0, 0, arrival.t_origin});
      fan_out.after_input();
      ++received;
    });
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const NoiseSnapshot noise = take_noise_snapshot();  // while the helper threads still live
  publisher.stop();
  if (depth_publisher) depth_publisher->stop();
  for (shm::ShmPublisher* r : {ring.get(), depth_ring.get()})
    if (r) r->close();  // consumers read to the end and stop
  for (MqttPublisher* m : {mqtt.get(), depth_mqtt.get()})
    if (m) m->stop();  // the end marker, then the broker's acknowledgements
  for (KafkaPublisher* k : {kafka.get(), depth_kafka.get()})
    if (k) k->stop();  // the end marker, then a flush
  logs.close();

  // Stopped by a signal, the input was not seen to its end; a late join that never had its snapshot stopped there.
  const bool join_failed = snapshot && !(snapshot->done() && snapshot->result().ok);
  const std::string stop_reason = join_failed ? "late join failed"
                                  : udp   ? udp_source->stats().stop_reason
                                  : xdp ? xdp_source->stats().stop_reason
                                        : serial_source->stats().stop_reason;
  const bool complete = stop_reason != "signal" && !join_failed;
  const std::string error = stop_reason == "signal" ? "stopped by a signal before the end of the session"
                            : join_failed ? "the late join failed: " + (snapshot->done() ? snapshot->result().error
                                                                                       : std::string("the snapshot never came"))
                                          : std::string();
  JsonWriter j;
  j.begin_object();
  j.field("source", o.source).field("complete", complete);
  j.field("error", error);
  j.field("stop_reason", stop_reason);
  j.field("elapsed_s", elapsed).field("messages_per_s", elapsed > 0 ? double(received) / elapsed : 0.0);
  j.field("messages_received", received);
  write_clock_json(j, clock, overhead);
  if (udp) {
    const UdpSourceStats& us = udp_source->stats();
    j.key("udp").begin_object();
    j.field("port", uint64_t(udp_source->port())).field("datagrams", us.datagrams).field("bytes", us.bytes);
    j.field("truncated", us.truncated).field("kernel_timestamps", us.kernel_timestamps);
    j.field("kernel_timestamps_unplaced", us.kernel_timestamps_unplaced);
    j.field("kernel_timestamps_across_step", us.kernel_timestamps_across_step);
    j.field("realtime_steps", us.realtime_steps).field("realtime_largest_step_ns", us.realtime_largest_step_ns);
    j.field("rcvbuf_requested", o.rcvbuf_bytes).field("rcvbuf_granted", us.rcvbuf_granted);
    j.field("unread_at_stop", us.unread_at_stop);
    j.field("multicast_group", o.join_group);
    j.key("per_line").begin_object();
    for (size_t l = 0; l < kLines; ++l) j.field(kLineNames[l], us.per_line[l]);
    j.end_object();
    j.field("busy_poll", o.busy_poll).field("rt_yield", rt_yield).field("rt_yields", us.rt_yields);
    j.end_object();
  }
  if (xdp) {
    const XdpSourceStats& xs = xdp_source->stats();
    j.key("af_xdp").begin_object();
    j.field("interface", o.interface).field("port", uint64_t(xdp_source->port()));
    j.field("attach_mode", xs.attach_granted).field("bind_mode", xs.bind_granted);
    j.field("attach_requested", o.xdp_attach).field("bind_requested", o.xdp_bind);
    j.field("frames", uint64_t(o.xdp_frames)).field("ring", uint64_t(o.xdp_ring)).field("batch", uint64_t(o.xdp_batch));
    j.field("datagrams", xs.datagrams).field("bytes", xs.bytes).field("not_udp", xs.not_udp);
    j.field("hook_stamps", xs.hook_stamps).field("hook_stamps_unplaced", xs.hook_stamps_unplaced);
    j.field("hook_feed_frames", xs.hook_feed_frames).field("hook_redirected", xs.hook_redirected);
    j.field("hook_no_socket", xs.hook_no_socket);
    j.field("hook_other_frames", xs.hook_other);
    j.field("rx_dropped", xs.rx_dropped).field("rx_ring_full", xs.rx_ring_full);
    j.field("rx_fill_ring_empty", xs.rx_fill_ring_empty).field("rx_invalid_descs", xs.rx_invalid_descs);
    j.field("busy_poll", o.busy_poll).field("rt_yield", rt_yield).field("rt_yields", xs.rt_yields);
    j.end_object();
  }
  if (recovery) write_recovery_json(j, *recovery);
  if (snapshot) {
    const bool done = snapshot->done();
    const SnapshotResult& r = snapshot->result();
    j.key("join").begin_object();
    j.field("snapshot", o.snapshot_addr + ":" + std::to_string(o.snapshot_port)).field("ok", done && r.ok);
    j.field("error", done ? r.error : std::string("the snapshot never came"));
    if (done) {
      j.field("messages", uint64_t(r.messages.size())).field("next_sequence", r.next_sequence);
      j.field("bytes", r.bytes).field("connections", uint64_t(r.connections));
      j.field("server_heartbeats", r.server_heartbeats);
      j.field("transfer_ms", r.ok ? double(r.done_ns - r.started_ns) / 1e6 : -1.0);
      j.field("joined_after_ms", joined_ns ? double(joined_ns - r.started_ns) / 1e6 : -1.0);
    }
    j.field("snapshot_messages_applied", gw.snapshot_messages()).field("snapshot_rejected", gw.snapshot_rejected());
    j.field("snapshot_events", gw.snapshot_events());
    j.end_object();
  }
  if (datagrams) {
    write_mold_json(j, gw.framer().counters());
    write_sequence_json(j, gw.framer().sequence().counters());
  } else {
    const serial::LineCounters& lc = serial_source->lines();
    j.key("serial").begin_object();
    j.field("device", o.device).field("baud", uint64_t(o.baud)).field("bytes", lc.bytes).field("lines", lc.lines);
    j.field("end_of_session", lc.end_of_session).field("garbage_bytes", lc.garbage_bytes);
    j.field("bad_checksum", lc.bad_checksum).field("malformed", lc.malformed).field("overlong", lc.overlong);
    j.end_object();
    write_mold_json(j, gw.framer().counters());
    write_sequence_json(j, serial_source->sequence().counters());
  }
  write_pipeline_counters(j, gw, book);
  write_publisher_json(j, "publisher", publisher, o);
  if (depth_publisher) write_publisher_json(j, "depth_publisher", *depth_publisher, o);
  if (mqtt) write_mqtt_json(j, "mqtt", *mqtt);
  if (depth_mqtt) write_mqtt_json(j, "depth_mqtt", *depth_mqtt);
  if (kafka) write_kafka_json(j, "kafka", *kafka);
  if (depth_kafka) write_kafka_json(j, "depth_kafka", *depth_kafka);
  for (const auto& [key, r] : {std::pair{"shm", ring.get()}, std::pair{"depth_shm", depth_ring.get()}}) {
    if (!r) continue;
    const shm::ProducerCounters& rc = r->counters();
    j.key(key).begin_object();
    j.field("name", r->name()).field("capacity", o.shm_capacity).field("policy", o.shm_wait ? "wait" : "overrun");
    j.field("record_bytes", uint64_t(r->header().record_bytes));
    j.field("published", rc.published).field("producer_waits", rc.waits);
    j.field("consumers_let_go", rc.consumers_let_go);
    j.end_object();
  }
  j.key("realtime").begin_object();
  write_grant(j, "cpu", pin, o.cpu);
  write_grant(j, "sched_fifo", fifo, o.sched_fifo);
  write_grant(j, "mlockall", mlock, 1);
  Grant pub_pin{o.publisher_cpu >= 0, publisher.pin_error()};
  write_grant(j, "publisher_cpu", pub_pin, o.publisher_cpu);
  j.end_object();
  write_logs_json(j, logs, clock);
  write_noise_json(j, noise);
  // What the kernel lets real-time threads use of each period (kernel.sched_rt_runtime_us, -1: unlimited).
  j.key("rt_throttling").begin_object();
  j.field("active", throttled).field("runtime_us", rt_runtime_us).field("period_us", rt_period_us);
  j.end_object();
  j.end_object();
  write_file_atomically(o.out + "/gateway.json", j.str());
  return join_failed ? 1 : 0;  // 1: the input was not taken as asked; gateway.json says why
}

}  // namespace itchbench
