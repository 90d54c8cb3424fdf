"""Produces and consumes with librdkafka (the confluent-kafka package), for the gateway's
client checks. Usage:
  rdkafka_check.py produce BOOTSTRAP TOPIC COUNT IDEMPOTENT   (keys k0..k4, values v0..)
  rdkafka_check.py assign  BOOTSTRAP TOPIC PARTITIONS COUNT   (from the start, no commits)
  rdkafka_check.py group   BOOTSTRAP TOPIC GROUP COUNT        (subscribe, synchronous commits)
Each consumed record is printed as "record PARTITION OFFSET KEY VALUE". The JSON object in
the environment variable KAFKACHECK_CONF, when set, is added to every client's configuration
(e.g. SASL)."""
import json
import os
import sys
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition


EXTRA = json.loads(os.environ.get("KAFKACHECK_CONF") or "{}")


def produce(bootstrap, topic, count, idempotent):
    errors = []

    def delivered(err, _msg):
        if err is not None:
            errors.append(err)

    p = Producer({**EXTRA, "bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": idempotent})
    for i in range(count):
        p.produce(topic, key=f"k{i % 5}", value=f"v{i}", on_delivery=delivered)
        p.poll(0)
    left = p.flush(60)
    if errors or left:
        raise SystemExit(f"produce: {left} undelivered, errors {errors}")
    print(f"produced {count}")


def consume(c, count, commit):
    n, deadline = 0, time.time() + 60
    while n < count:
        if time.time() > deadline:
            raise SystemExit(f"read {n} of {count} records in 60 s")
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            raise KafkaException(m.error())
        print(f"record {m.partition()} {m.offset()} {m.key().decode()} {m.value().decode()}", flush=True)
        n += 1
        if commit:
            c.commit(message=m, asynchronous=False)


def main():
    mode, bootstrap, topic = sys.argv[1:4]
    conf = {**EXTRA, "bootstrap.servers": bootstrap, "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    if mode == "produce":
        produce(bootstrap, topic, int(sys.argv[4]), sys.argv[5] == "true")
    elif mode == "assign":
        c = Consumer({**conf, "group.id": topic + "-unused"})
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(int(sys.argv[4]))])
        consume(c, int(sys.argv[5]), False)
        c.close()
    elif mode == "group":
        c = Consumer({**conf, "group.id": sys.argv[4]})
        c.subscribe([topic])
        consume(c, int(sys.argv[5]), True)
        c.close()
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
