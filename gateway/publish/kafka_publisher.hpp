// Kafka BBO publisher: every BBO event as one record (the 48-byte frame,
// gateway/log/FORMAT.md; a second one carries depth records) on a topic of a real broker (Apache Kafka in KRaft
// mode, through librdkafka). Off the hot path as the TCP and MQTT
// publishers are: publish() only pushes into a lock-free SPSC ring; a
// thread of its own drains it into librdkafka's queue (acks, linger and
// batch size as the run asks) and serves its delivery reports
// (publish/frame_handoff.hpp). At stop it
// produces an end marker (key "end", the count produced) and flushes.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "log/log_format.hpp"
#include "publish/frame_handoff.hpp"

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_message_s rd_kafka_message_t;

namespace itchbench {

struct KafkaOptions {
  std::string brokers = "127.0.0.1:9092";
  std::string topic = "itchbench-bbo";
  std::string acks = "1";       // 0, 1 or all
  uint64_t linger_ms = 0;       // librdkafka linger.ms
  uint64_t batch_messages = 10000;  // batch.num.messages
  uint64_t poll_interval_us = 50;
  size_t frame_bytes = sizeof(logfmt::BboRecord);  // every record's size: a BBO record, or a depth record
  std::string thread_name = "bbo-kafka";
};

struct KafkaCounters {
  std::atomic<uint64_t> produced{0};   // accepted into librdkafka's queue
  std::atomic<uint64_t> errors{0};     // refused by librdkafka (queue full, unknown topic...)
  std::atomic<uint64_t> delivered{0};  // delivery reports without error (as acks asks)
  std::atomic<uint64_t> failed{0};     // delivery reports with an error
};

class KafkaPublisher {
 public:
  explicit KafkaPublisher(const KafkaOptions& options);  // throws naming the setting or the broker
  ~KafkaPublisher();
  KafkaPublisher(const KafkaPublisher&) = delete;
  KafkaPublisher& operator=(const KafkaPublisher&) = delete;

  void start();
  void publish(const logfmt::BboRecord& frame) { handoff_.push(&frame); }  // hot path, a BBO publisher
  void publish_frame(const void* frame) { handoff_.push(frame); }              // hot path: options.frame_bytes
  void after_input() { handoff_.after_input(); }
  // Drains the ring, produces the end marker, flushes (flush_ms at most).
  void stop(uint64_t flush_ms = 10000);
  const KafkaCounters& counters() const { return counters_; }
  uint64_t published() const { return handoff_.handed(); }          // events handed over by the hot path
  uint64_t ring_dropped() const { return handoff_.ring_dropped(); }  // the ring was full
  const KafkaOptions& options() const { return options_; }

 private:
  void send(const uint8_t* frame, size_t bytes);
  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* msg, void* self);

  KafkaOptions options_;
  rd_kafka_t* rk_ = nullptr;
  KafkaCounters counters_;
  bool stopped_ = false;
  FrameHandoff handoff_{options_.poll_interval_us, options_.frame_bytes};
};

}  // namespace itchbench
