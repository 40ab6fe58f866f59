#include "publish/mqtt_publisher.hpp"

#include <mosquitto.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>


namespace itchbench {

namespace {
// libmosquitto's global state, set up once for the process.
struct MosquittoLibrary {
  MosquittoLibrary() { mosquitto_lib_init(); }
  ~MosquittoLibrary() { mosquitto_lib_cleanup(); }
};
void ensure_library() { static MosquittoLibrary library; }

std::string where(const MqttOptions& o) { return "MQTT broker " + o.host + ":" + std::to_string(o.port); }
}  // namespace

MqttPublisher::MqttPublisher(const MqttOptions& options) : options_(options) {
  if (options.qos < 0 || options.qos > 2) throw std::invalid_argument("MQTT QoS must be 0, 1 or 2");
  ensure_library();
  const std::string id = "itch-gateway-" + std::to_string(::getpid()) + "-" + options.topic;  // one per topic
  mosq_ = mosquitto_new(id.c_str(), true, this);
  if (!mosq_) throw std::runtime_error("MQTT: cannot create a client");
  mosquitto_publish_callback_set(mosq_, &MqttPublisher::on_publish);
  // Messages queued beyond what is in flight wait in libmosquitto, not on the hot path.
  mosquitto_int_option(mosq_, MOSQ_OPT_SEND_MAXIMUM, 1000);
  const int rc = mosquitto_connect(mosq_, options.host.c_str(), options.port, 60);
  if (rc != MOSQ_ERR_SUCCESS) {
    mosquitto_destroy(mosq_);
    throw std::runtime_error(where(options) + ": cannot connect: " + mosquitto_strerror(rc));
  }
  if (mosquitto_loop_start(mosq_) != MOSQ_ERR_SUCCESS) {
    mosquitto_destroy(mosq_);
    throw std::runtime_error("MQTT: cannot start libmosquitto's network thread");
  }
}

MqttPublisher::~MqttPublisher() {
  stop(0);
  mosquitto_disconnect(mosq_);
  mosquitto_loop_stop(mosq_, false);
  mosquitto_destroy(mosq_);
}

void MqttPublisher::on_publish(struct mosquitto*, void* self, int mid) {
  auto* p = static_cast<MqttPublisher*>(self);
  if (mid != p->end_mid_) p->counters_.acked.fetch_add(1, std::memory_order_relaxed);
}

void MqttPublisher::send(const uint8_t* frame, size_t bytes) {
  const int rc = mosquitto_publish(mosq_, nullptr, options_.topic.c_str(), int(bytes), frame, options_.qos, false);
  // Without a connection (the broker restarting) libmosquitto still keeps a QoS 1 or 2 message, and sends it
  // once it has connected again; a QoS 0 one is gone.
  const bool kept = rc == MOSQ_ERR_SUCCESS || (rc == MOSQ_ERR_NO_CONN && options_.qos > 0);
  (kept ? counters_.sent : counters_.errors).fetch_add(1, std::memory_order_relaxed);
}

void MqttPublisher::start() {
  handoff_.start(options_.thread_name, [this](const uint8_t* frame, size_t bytes) { send(frame, bytes); }, nullptr);
}

void MqttPublisher::stop(uint64_t flush_ms) {
  if (stopped_) return;
  stopped_ = true;
  handoff_.stop();
  const std::string count = std::to_string(counters_.sent.load());
  mosquitto_publish(mosq_, &end_mid_, (options_.topic + "/end").c_str(), int(count.size()), count.data(), 1, false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(flush_ms);
  while (!all_acked() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(flush_ms ? 50 : 0));  // the end marker on its way
}

}  // namespace itchbench
