// bbo-mqtt-subscriber: a subscriber of the gateway's BBO stream through an
// MQTT broker (publish/mqtt_publisher.hpp), with libmosquitto. Subscribes
// to TOPIC and TOPIC/end, stamps each message as libmosquitto hands it over
// and writes what every subscriber of ours writes
// (publish/subscriber_output.hpp). It ends once the end marker has come
// and every event it announced has arrived, or --grace-ms after the marker
// (QoS 0 may lose messages: those are counted, never waited for).
// OUT.json: "subscribed" (once the broker acknowledged), events received,
// events the gateway said it published, how it ended. --mode slow takes
// 1 ms over each message (the broker queues, and past its limit drops);
// --mode reconnect leaves and connects again every second, keeping its
// session (QoS 1 and 2 messages are held for it meanwhile).
// --collect FORMAT: the collector of a gateway that declares MQTT as its
// BBO output in its contract (docs/gateway-contract.md): every message's
// lines (csv, jsonl) or records (itchbench) into OUT as the TCP collector
// writes them, until SIGTERM; OUT + ".json" says how it ended. Told to
// stop, it first publishes a marker of its own to TOPIC/end and reads on
// until the marker comes back: the broker hands a client its messages in
// the order it took them, so what it still held of the gateway's output
// has come by then (left_unread 0; the marker not back within 10 s: not
// known).
#include <mosquitto.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "publish/subscriber_output.hpp"
#include "source/stop_flag.hpp"
#include "util/cli.hpp"

namespace {

struct State {
  std::string topic, end_topic;
  int qos = 0;
  itchbench::SubscriberOutput* out = nullptr;
  itchbench::CollectorOutput* collect = nullptr;  // --collect: a foreign gateway's output, as it is
  bool slow = false;
  uint64_t reconnects = 0;  // --mode reconnect: times it left and came back
  bool subscribed = false;
  bool end_seen = false;
  uint64_t announced = 0;
  uint64_t bad_size = 0;  // messages that were not one whole frame (48 bytes, or a depth record's size)
  std::chrono::steady_clock::time_point end_at;
  std::string marker;  // a collector's own end marker, once told to stop
  bool marker_back = false;
  int64_t left_unread = -1;  // a collector's: 0 once its marker came back, -1 not known
};

constexpr auto kMarkerBackMost = std::chrono::seconds(10);

void write_info(const State& s, const std::string& ended) {
  if (s.collect) return s.collect->write_info(s.subscribed, ended, s.left_unread);
  s.out->write_info([&](itchbench::JsonWriter& j) {
    j.field("subscribed", s.subscribed).field("received", s.out->events()).field("bad_size", s.bad_size);
    j.field("announced", s.announced).field("end_seen", s.end_seen).field("ended", ended);
    j.field("reconnects", s.reconnects);
  });
}

void on_connect(struct mosquitto* m, void* self, int rc) {
  auto* s = static_cast<State*>(self);
  if (rc != 0) return;
  char* const topics[] = {s->topic.data(), s->end_topic.data()};
  mosquitto_subscribe_multiple(m, nullptr, 2, topics, s->qos, 0, nullptr);
}

void on_subscribe(struct mosquitto*, void* self, int, int, const int*) {
  auto* s = static_cast<State*>(self);
  s->subscribed = true;
  write_info(*s, "");
}

void on_message(struct mosquitto*, void* self, const struct mosquitto_message* msg) {
  const uint64_t t = itchbench::monotonic_ns();  // first, before anything else is done with it
  auto* s = static_cast<State*>(self);
  if (s->collect) {
    if (!s->marker.empty() && s->end_topic == msg->topic &&
        std::string_view(static_cast<const char*>(msg->payload), size_t(msg->payloadlen)) == s->marker) {
      s->marker_back = true;
      return;
    }
    s->collect->on_payload(msg->payload, size_t(msg->payloadlen), t);
    return;
  }
  if (s->end_topic == msg->topic) {
    s->announced = std::strtoull(std::string(static_cast<const char*>(msg->payload), size_t(msg->payloadlen)).c_str(),
                                 nullptr, 10);
    s->end_seen = true;
    s->end_at = std::chrono::steady_clock::now();
    return;
  }
  if (size_t(msg->payloadlen) != s->out->frame_bytes()) {
    ++s->bad_size;
    return;
  }
  s->out->on_frame(msg->payload, t);
  if (s->slow) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace itchbench;
  cli::Args args("bbo-mqtt-subscriber", "bbo-mqtt-subscriber --port PORT --topic TOPIC --out FILE [options]",
                 "A subscriber of the gateway's BBO stream through an MQTT broker (itch-gateway --publish-mqtt).\n"
                 "Exit status: 0 the stream ended (or SIGTERM), 1 the broker could not be reached, 2 usage.");
  args.option("host", "ADDR", "the broker", "127.0.0.1");
  args.option("port", "PORT", "the broker's port");
  args.option("topic", "TOPIC", "the BBO topic (its end marker: TOPIC/end)", "itchbench/bbo");
  args.option("qos", "N", "subscription QoS 0, 1 or 2", "1");
  args.option("out", "FILE", "where the frames go (FILE.recv, FILE.json beside it)");
  args.option("grace-ms", "MS", "after the end marker, how long to wait for events still missing", "2000");
  args.option("collect", "FORMAT", "collect a gateway's own BBO output (csv, jsonl, itchbench) until SIGTERM", "");
  args.option("mode", "MODE", "fast, slow (1 ms a message) or reconnect (every second)", "fast");
  args.option("levels", "N", "the stream is the gateway's depth topic (N levels a side, or all): its depth log's level "
              "change records; 0: BBO records", "0");
  args.parse(argc, argv);
  uint32_t levels = 0;
  if (!logfmt::parse_depth_levels(args.get("levels"), levels)) args.fail("--levels takes 0 to 64, or all");
  if (!args.has("port") || !args.has("out")) args.fail("--port and --out are required");
  State s;
  s.topic = args.get("topic");
  s.end_topic = s.topic + "/end";
  s.qos = int(args.get_u64("qos"));
  if (s.qos > 2) args.fail("--qos takes 0, 1 or 2");
  const std::string mode = args.get("mode");
  if (mode != "fast" && mode != "slow" && mode != "reconnect") args.fail("--mode takes fast, slow or reconnect");
  s.slow = mode == "slow";
  const auto grace = std::chrono::milliseconds(args.get_u64("grace-ms"));
  install_stop_signal_handlers();

  std::unique_ptr<SubscriberOutput> output;
  std::unique_ptr<CollectorOutput> collector;
  try {
    SubscriberFiles files =
        open_subscriber_files(args.get("out"), args.get("collect"), levels);
    output = std::move(files.own);
    collector = std::move(files.collected);
  } catch (const std::invalid_argument& e) {
    args.fail(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bbo-mqtt-subscriber: %s\n", e.what());
    return 1;
  }
  s.out = output.get();
  s.collect = collector.get();
  mosquitto_lib_init();
  // Reconnecting, it keeps its session (a fixed id, clean session off): the broker holds its QoS 1 and 2
  // messages while it is away, as a real subscriber that reconnects would ask.
  const std::string id = "itchbench-subscriber-" + std::to_string(::getpid());
  struct mosquitto* m = mode == "reconnect" ? mosquitto_new(id.c_str(), false, &s) : mosquitto_new(nullptr, true, &s);
  mosquitto_connect_callback_set(m, on_connect);
  mosquitto_subscribe_callback_set(m, on_subscribe);
  mosquitto_message_callback_set(m, on_message);
  const int rc = mosquitto_connect(m, args.get("host").c_str(), int(args.get_u64("port")), 60);
  if (rc != MOSQ_ERR_SUCCESS) {
    std::fprintf(stderr, "bbo-mqtt-subscriber: MQTT broker %s:%s: %s\n", args.get("host").c_str(),
                 args.get("port").c_str(), mosquitto_strerror(rc));
    return 1;
  }
  std::string ended = "signal";
  auto next_reconnect = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (!stop_requested().load()) {
    if (mosquitto_loop(m, 10, 1) != MOSQ_ERR_SUCCESS) {  // the broker went away (a restart): connect again
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      mosquitto_reconnect(m);  // on_connect subscribes again
    }
    if (mode == "reconnect" && !s.end_seen && std::chrono::steady_clock::now() >= next_reconnect) {
      mosquitto_disconnect(m);
      mosquitto_loop(m, 10, 1);
      mosquitto_reconnect(m);
      ++s.reconnects;
      next_reconnect = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    if (s.collect) continue;  // a foreign gateway announces no end: until SIGTERM
    if (s.end_seen && output->events() >= s.announced) {
      ended = "end of stream";
      break;
    }
    if (s.end_seen && std::chrono::steady_clock::now() - s.end_at > grace) {
      ended = "end of stream, events missing";
      break;
    }
  }
  if (s.collect && s.subscribed) {  // what the broker still holds for it comes before its own marker
    s.marker = "itchbench-collector-end-" + std::to_string(::getpid());
    mosquitto_publish(m, nullptr, s.end_topic.c_str(), int(s.marker.size()), s.marker.data(), 1, false);
    const auto give_up = std::chrono::steady_clock::now() + kMarkerBackMost;
    while (!s.marker_back && std::chrono::steady_clock::now() < give_up)
      if (mosquitto_loop(m, 10, 1) != MOSQ_ERR_SUCCESS) break;  // the broker gone: what it held is not known
    if (s.marker_back) s.left_unread = 0;
  }
  mosquitto_disconnect(m);
  mosquitto_destroy(m);
  mosquitto_lib_cleanup();
  if (output) output->close();
  if (collector) collector->close();
  write_info(s, collector ? "sigterm" : ended);
  return 0;
}
