// MQTT BBO publisher: every BBO event as one MQTT message (the 48-byte
// frame, gateway/log/FORMAT.md; a second one carries depth records) on a topic of a real broker (Eclipse
// Mosquitto, through libmosquitto). Off the hot path as the TCP publisher
// is: publish() only pushes into a lock-free SPSC ring; a thread of its own
// drains the ring into libmosquitto, whose network thread talks to the
// broker (publish/frame_handoff.hpp). At stop it publishes, on TOPIC/end,
// how many events it published,
// so subscribers know the stream's end and its length, and waits (bounded)
// for the broker's acknowledgements (QoS 1 and 2).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "log/log_format.hpp"
#include "publish/frame_handoff.hpp"

struct mosquitto;

namespace itchbench {

struct MqttOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 1883;
  std::string topic = "itchbench/bbo";
  int qos = 0;
  uint64_t poll_interval_us = 50;  // how often the thread drains the ring
  size_t frame_bytes = sizeof(logfmt::BboRecord);  // every message's size: a BBO record, or a depth record
  std::string thread_name = "bbo-mqtt";
};

struct MqttCounters {
  std::atomic<uint64_t> sent{0};      // accepted by libmosquitto
  std::atomic<uint64_t> errors{0};    // refused by libmosquitto (connection lost, out of memory)
  std::atomic<uint64_t> acked{0};     // acknowledged by the broker (QoS 1, 2); sent on the wire for QoS 0
};

class MqttPublisher {
 public:
  explicit MqttPublisher(const MqttOptions& options);  // connects (5 s at most); throws naming the broker
  ~MqttPublisher();
  MqttPublisher(const MqttPublisher&) = delete;
  MqttPublisher& operator=(const MqttPublisher&) = delete;

  void start();
  void publish(const logfmt::BboRecord& frame) { handoff_.push(&frame); }  // hot path, a BBO publisher
  void publish_frame(const void* frame) { handoff_.push(frame); }              // hot path: options.frame_bytes
  void after_input() { handoff_.after_input(); }
  // Drains the ring, publishes the end marker, waits up to flush_ms for acknowledgements, disconnects.
  void stop(uint64_t flush_ms = 5000);
  const MqttCounters& counters() const { return counters_; }
  uint64_t published() const { return handoff_.handed(); }          // events handed over by the hot path
  uint64_t ring_dropped() const { return handoff_.ring_dropped(); }  // the ring was full
  const MqttOptions& options() const { return options_; }
  bool all_acked() const { return counters_.acked.load() == counters_.sent.load(); }

 private:
  void send(const uint8_t* frame, size_t bytes);
  static void on_publish(struct mosquitto*, void* self, int mid);

  MqttOptions options_;
  struct mosquitto* mosq_ = nullptr;
  MqttCounters counters_;
  // The end marker's message id. libmosquitto writes it before it queues the message, under the lock its
  // network thread takes to send it, so the acknowledgement's callback always sees it.
  int end_mid_ = -1;
  bool stopped_ = false;
  FrameHandoff handoff_{options_.poll_interval_us, options_.frame_bytes};
};

}  // namespace itchbench
