#include "publish/kafka_publisher.hpp"

#include <librdkafka/rdkafka.h>

#include <stdexcept>

namespace itchbench {

namespace {
void set(rd_kafka_conf_t* conf, const char* key, const std::string& value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key, value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    throw std::invalid_argument(std::string("Kafka ") + key + "=" + value + ": " + err);
  }
}
constexpr const char* kEndKey = "end";
}  // namespace

KafkaPublisher::KafkaPublisher(const KafkaOptions& options) : options_(options) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", options.brokers);
  set(conf, "acks", options.acks);
  set(conf, "linger.ms", std::to_string(options.linger_ms));
  set(conf, "batch.num.messages", std::to_string(options.batch_messages));
  set(conf, "queue.buffering.max.messages", "1000000");
  set(conf, "enable.idempotence", "false");
  set(conf, "reconnect.backoff.ms", "50");  // a broker that restarts is found again within half a second
  set(conf, "reconnect.backoff.max.ms", "500");
  rd_kafka_conf_set_opaque(conf, this);
  rd_kafka_conf_set_dr_msg_cb(conf, &KafkaPublisher::on_delivery);
  char err[512];
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk_) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(std::string("Kafka producer: ") + err);
  }
  // The broker answers before the first event: a gateway whose broker is not there says so at start.
  const rd_kafka_metadata_t* md = nullptr;
  const rd_kafka_resp_err_t rc = rd_kafka_metadata(rk_, 0, nullptr, &md, 5000);
  if (rc != RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_destroy(rk_);
    throw std::runtime_error("Kafka broker " + options.brokers + ": " + rd_kafka_err2str(rc));
  }
  rd_kafka_metadata_destroy(md);
}

KafkaPublisher::~KafkaPublisher() {
  stop(0);
  rd_kafka_destroy(rk_);
}

void KafkaPublisher::on_delivery(rd_kafka_t*, const rd_kafka_message_t* msg, void* self) {
  auto* p = static_cast<KafkaPublisher*>(self);
  if (msg->key_len == 3 && std::string(static_cast<const char*>(msg->key), 3) == kEndKey) return;
  (msg->err ? p->counters_.failed : p->counters_.delivered).fetch_add(1, std::memory_order_relaxed);
}

void KafkaPublisher::send(const uint8_t* frame, size_t bytes) {
  const rd_kafka_resp_err_t rc =
      rd_kafka_producev(rk_, RD_KAFKA_V_TOPIC(options_.topic.c_str()), RD_KAFKA_V_PARTITION(0),
                        RD_KAFKA_V_VALUE(const_cast<uint8_t*>(frame), bytes),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  (rc == RD_KAFKA_RESP_ERR_NO_ERROR ? counters_.produced : counters_.errors).fetch_add(1, std::memory_order_relaxed);
}

void KafkaPublisher::start() {
  handoff_.start(options_.thread_name, [this](const uint8_t* frame, size_t bytes) { send(frame, bytes); },
                 [this] { rd_kafka_poll(rk_, 0); });
}

void KafkaPublisher::stop(uint64_t flush_ms) {
  if (stopped_) return;
  stopped_ = true;
  handoff_.stop();
  const std::string count = std::to_string(counters_.produced.load());
  rd_kafka_producev(rk_, RD_KAFKA_V_TOPIC(options_.topic.c_str()), RD_KAFKA_V_PARTITION(0),
                    RD_KAFKA_V_KEY(kEndKey, 3), RD_KAFKA_V_VALUE(const_cast<char*>(count.data()), count.size()),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  rd_kafka_flush(rk_, int(flush_ms));
}

}  // namespace itchbench
