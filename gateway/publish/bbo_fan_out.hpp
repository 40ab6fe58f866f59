// The live gateway's publishers behind the one publish() the pipeline calls:
// the TCP publisher always, the shared-memory ring, MQTT and Kafka when the
// run asks for them. Each receives the same 48-byte frame: the BBO log's
// record. With depth (--levels N), publish_depth() hands each depth event, its
// depth log record, to a second publisher of each kind the run uses: TCP (its
// own port), the shared-memory ring (NAME-depth), MQTT (TOPIC/depth) and
// Kafka (TOPIC-depth).
#pragma once
#include "book/bbo.hpp"
#include "log/bbo_record.hpp"
#include "log/log_format.hpp"
#include "publish/kafka_publisher.hpp"
#include "publish/mqtt_publisher.hpp"
#include "publish/shm_ring.hpp"
#include "publish/tcp_publisher.hpp"

namespace itchbench {

inline logfmt::BboRecord bbo_frame(const BboEvent& e) {
  logfmt::BboRecord r{};
  fill_bbo_record(r, e);
  r.flags = uint8_t(logfmt::kWritten | e.flags);
  return r;
}

// The depth publishers: null where the run has none of that kind.
struct DepthPublishers {
  TcpPublisher* tcp = nullptr;
  shm::ShmPublisher* ring = nullptr;
  MqttPublisher* mqtt = nullptr;
  KafkaPublisher* kafka = nullptr;
};

class BboFanOut {
 public:
  BboFanOut(TcpPublisher& tcp, shm::ShmPublisher* ring, MqttPublisher* mqtt, KafkaPublisher* kafka,
            DepthPublishers depth = {})
      : tcp_(tcp), ring_(ring), mqtt_(mqtt), kafka_(kafka), depth_(depth) {}
  void publish(const BboEvent& e) {  // hot path
    const logfmt::BboRecord frame = bbo_frame(e);
    tcp_.publish(frame);
    if (ring_) ring_->publish(frame);
    if (mqtt_) mqtt_->publish(frame);
    if (kafka_) kafka_->publish(frame);
  }
  void publish_depth(const uint8_t* record) {  // hot path: a depth log record
    if (depth_.tcp) depth_.tcp->publish_frame(record);
    if (depth_.ring) depth_.ring->publish_record(record);
    if (depth_.mqtt) depth_.mqtt->publish_frame(record);
    if (depth_.kafka) depth_.kafka->publish_frame(record);
  }
  // Once a datagram (or serial line) is done: wakes the publisher threads asleep on their doorbells.
  void after_input() {
    tcp_.after_input();
    if (mqtt_) mqtt_->after_input();
    if (kafka_) kafka_->after_input();
    if (depth_.tcp) depth_.tcp->after_input();
    if (depth_.mqtt) depth_.mqtt->after_input();
    if (depth_.kafka) depth_.kafka->after_input();
  }

 private:
  TcpPublisher& tcp_;
  shm::ShmPublisher* ring_;
  MqttPublisher* mqtt_;
  KafkaPublisher* kafka_;
  DepthPublishers depth_;
};

}  // namespace itchbench
