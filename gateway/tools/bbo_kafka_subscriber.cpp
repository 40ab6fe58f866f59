// bbo-kafka-subscriber: a subscriber of the gateway's BBO stream through a
// Kafka broker (publish/kafka_publisher.hpp), with librdkafka. Reads the
// topic's one partition from its beginning, stamps each record as the
// consumer hands it over, and writes what every subscriber of ours writes
// (publish/subscriber_output.hpp). It ends at the end marker (key "end",
// the count the gateway produced) once every announced record has come,
// or --grace-ms after it. OUT.json: "subscribed" (the partition is there),
// records received, records announced, how it ended. --mode slow takes
// 1 ms over each record (it lags; Kafka keeps the records); --mode
// reconnect closes its consumer every second and opens a new one at the
// next offset.
// --probe: produce one record to itchbench-ready and read it back (the
// broker's readiness), exit 0 when it came back.
// --collect FORMAT: the collector of a gateway that declares Kafka as its
// BBO output in its contract: every record's lines or records into OUT as
// the TCP collector writes them, until SIGTERM (OUT + ".json"); told to
// stop, it reads on to the partition's end as the stop finds it (what it
// had not read is the gateway's output too), and says what it could not
// read in time (left_unread).
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "publish/subscriber_output.hpp"
#include "source/stop_flag.hpp"
#include "util/cli.hpp"

namespace {

rd_kafka_t* make(rd_kafka_type_t type, const std::string& brokers) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  auto set = [&](const char* k, const char* v) {
    if (rd_kafka_conf_set(conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) throw std::runtime_error(err);
  };
  set("bootstrap.servers", brokers.c_str());
  set("reconnect.backoff.ms", "50");  // a broker that restarts is found again within half a second
  set("reconnect.backoff.max.ms", "500");
  if (type == RD_KAFKA_CONSUMER) {
    set("group.id", "itchbench");
    set("enable.auto.commit", "false");
    // A long poll the broker answers as soon as it has a byte: low latency without a fetch loop (a 1 ms
    // fetch.wait.max.ms keeps the broker answering empty fetches, and on a small machine slows everything).
    set("fetch.wait.max.ms", "100");
    set("fetch.min.bytes", "1");
    set("allow.auto.create.topics", "true");
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  if (!rk) throw std::runtime_error(err);
  return rk;
}

constexpr auto kCatchUpMost = std::chrono::seconds(10);  // a collector told to stop, reading to the partition's end

// A collector told to stop: the records from next_offset (RD_KAFKA_OFFSET_BEGINNING: none read yet) to the
// partition's high watermark as it is now, read into collector, kCatchUpMost at most; how many it left unread
// (-1: the watermark could not be had).
int64_t catch_up(rd_kafka_t* c, const std::string& topic, int64_t next_offset, itchbench::CollectorOutput& collector) {
  int64_t lo = 0, hi = 0;
  if (rd_kafka_query_watermark_offsets(c, topic.c_str(), 0, &lo, &hi, 5000) != RD_KAFKA_RESP_ERR_NO_ERROR) return -1;
  int64_t next = next_offset < 0 ? lo : next_offset;
  const auto give_up = std::chrono::steady_clock::now() + kCatchUpMost;
  while (next < hi && std::chrono::steady_clock::now() < give_up) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 100);
    const uint64_t t = itchbench::monotonic_ns();
    if (!m) continue;
    if (!m->err) {
      collector.on_payload(m->payload, m->len, t);
      next = m->offset + 1;
    }
    rd_kafka_message_destroy(m);
  }
  return hi > next ? hi - next : 0;
}

void assign_from(rd_kafka_t* rk, const std::string& topic, int64_t offset) {
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(parts, topic.c_str(), 0)->offset = offset;
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
}

int probe(const std::string& brokers) {
  const std::string topic = "itchbench-ready";
  rd_kafka_t* p = make(RD_KAFKA_PRODUCER, brokers);
  rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_VALUE(const_cast<char*>("ok"), 2),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  const bool flushed = rd_kafka_flush(p, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR;
  rd_kafka_destroy(p);
  if (!flushed) return 1;
  rd_kafka_t* c = make(RD_KAFKA_CONSUMER, brokers);
  assign_from(c, topic, RD_KAFKA_OFFSET_BEGINNING);
  bool back = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!back && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 100);
    if (m) {
      back = !m->err && m->len == 2;
      rd_kafka_message_destroy(m);
    }
  }
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  return back ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace itchbench;
  cli::Args args("bbo-kafka-subscriber", "bbo-kafka-subscriber --brokers ADDR:PORT --topic TOPIC --out FILE",
                 "A subscriber of the gateway's BBO stream through a Kafka broker (itch-gateway --publish-kafka).\n"
                 "Exit status: 0 the stream ended (or SIGTERM; --probe: the record came back), 1 the broker\n"
                 "could not be used, 2 usage.");
  args.option("brokers", "ADDR:PORT", "bootstrap servers");
  args.option("topic", "TOPIC", "the BBO topic (partition 0)", "itchbench-bbo");
  args.option("out", "FILE", "where the frames go (FILE.recv, FILE.json beside it)");
  args.option("grace-ms", "MS", "after the end marker, how long to wait for records still missing", "2000");
  args.flag("probe", "produce one record and read it back, then exit");
  args.option("collect", "FORMAT", "collect a gateway's own BBO output (csv, jsonl, itchbench) until SIGTERM", "");
  args.option("mode", "MODE", "fast, slow (1 ms a record) or reconnect (a new consumer every second)", "fast");
  args.option("levels", "N", "the stream is the gateway's depth topic (N levels a side, or all): its depth log's level "
              "change records; 0: BBO records", "0");
  args.parse(argc, argv);
  if (!args.has("brokers")) args.fail("--brokers is required");
  try {
    if (args.flag_set("probe")) return probe(args.get("brokers"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bbo-kafka-subscriber: %s\n", e.what());
    return 1;
  }
  if (!args.has("out")) args.fail("--out is required");
  uint32_t levels = 0;
  if (!logfmt::parse_depth_levels(args.get("levels"), levels)) args.fail("--levels takes 0 to 64, or all");
  const std::string topic = args.get("topic");
  const std::string mode = args.get("mode");
  if (mode != "fast" && mode != "slow" && mode != "reconnect") args.fail("--mode takes fast, slow or reconnect");
  const auto grace = std::chrono::milliseconds(args.get_u64("grace-ms"));
  install_stop_signal_handlers();

  std::unique_ptr<SubscriberOutput> output;
  std::unique_ptr<CollectorOutput> collector;
  rd_kafka_t* c = nullptr;
  try {
    SubscriberFiles files =
        open_subscriber_files(args.get("out"), args.get("collect"), levels);
    output = std::move(files.own);
    collector = std::move(files.collected);
    c = make(RD_KAFKA_CONSUMER, args.get("brokers"));
  } catch (const std::invalid_argument& e) {
    args.fail(e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bbo-kafka-subscriber: %s\n", e.what());
    return 1;
  }
  assign_from(c, topic, RD_KAFKA_OFFSET_BEGINNING);
  bool subscribed = false, end_seen = false;
  uint64_t announced = 0, bad_size = 0;
  int64_t left_unread = -1;  // a collector's, once told to stop
  auto info = [&](const std::string& ended) {
    if (collector) return collector->write_info(subscribed, ended, left_unread);
    output->write_info([&](JsonWriter& j) {
      j.field("subscribed", subscribed).field("received", output->events()).field("bad_size", bad_size);
      j.field("announced", announced).field("end_seen", end_seen).field("ended", ended);
    });
  };
  info("");
  std::chrono::steady_clock::time_point end_at;
  auto next_reconnect = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  int64_t next_offset = RD_KAFKA_OFFSET_BEGINNING;
  std::string ended = "signal";
  while (!stop_requested().load()) {
    if (!subscribed) {  // the topic's partition exists (the consumer's metadata request created it)
      int64_t lo = 0, hi = 0;
      if (rd_kafka_query_watermark_offsets(c, topic.c_str(), 0, &lo, &hi, 200) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        subscribed = true;
        info("");
      }
    }
    if (mode == "reconnect" && subscribed && !end_seen && std::chrono::steady_clock::now() >= next_reconnect) {
      rd_kafka_consumer_close(c);  // a new consumer, at the offset after the last record it had
      rd_kafka_destroy(c);
      c = make(RD_KAFKA_CONSUMER, args.get("brokers"));
      assign_from(c, topic, next_offset);
      next_reconnect = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 10);
    const uint64_t t = monotonic_ns();  // first, before anything else is done with it
    if (m) {
      if (!m->err && collector) {
        collector->on_payload(m->payload, m->len, t);
      } else if (!m->err) {
        if (m->key_len == 3 && std::memcmp(m->key, "end", 3) == 0) {
          announced = std::strtoull(std::string(static_cast<const char*>(m->payload), m->len).c_str(), nullptr, 10);
          end_seen = true;
          end_at = std::chrono::steady_clock::now();
        } else if (m->len != output->frame_bytes()) {
          ++bad_size;
        } else {
          output->on_frame(m->payload, t);
        }
      }
      if (!m->err) next_offset = m->offset + 1;
      rd_kafka_message_destroy(m);
      if (mode == "slow") std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (collector) continue;  // a foreign gateway announces no end: until SIGTERM
    if (end_seen && output->events() >= announced) {
      ended = "end of stream";
      break;
    }
    if (end_seen && std::chrono::steady_clock::now() - end_at > grace) {
      ended = "end of stream, records missing";
      break;
    }
  }
  if (collector && subscribed) left_unread = catch_up(c, topic, next_offset, *collector);
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  if (output) output->close();
  if (collector) collector->close();
  info(collector ? "sigterm" : ended);
  return 0;
}
