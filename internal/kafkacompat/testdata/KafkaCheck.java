// KafkaCheck produces and consumes with Apache Kafka's Java client (kafka-clients), for
// the gateway's client checks. Usage:
//   KafkaCheck produce BOOTSTRAP TOPIC COUNT IDEMPOTENT     (keys k0..k4, values v0..)
//   KafkaCheck assign  BOOTSTRAP TOPIC PARTITIONS COUNT     (from the start, no group)
//   KafkaCheck group   BOOTSTRAP TOPIC GROUP COUNT          (subscribe, commitSync)
// Each consumed record is printed as "record PARTITION OFFSET KEY VALUE". The properties
// file named by KAFKACHECK_PROPS, when set, is added to every client's (e.g. SASL).
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class KafkaCheck {
  public static void main(String[] args) throws Exception {
    String mode = args[0], bootstrap = args[1], topic = args[2];
    switch (mode) {
      case "produce" -> produce(bootstrap, topic, Integer.parseInt(args[3]), Boolean.parseBoolean(args[4]));
      case "assign" -> assign(bootstrap, topic, Integer.parseInt(args[3]), Integer.parseInt(args[4]));
      case "group" -> group(bootstrap, topic, args[3], Integer.parseInt(args[4]));
      default -> throw new IllegalArgumentException("unknown mode " + mode);
    }
  }

  static Properties base() throws java.io.IOException {
    Properties p = new Properties();
    String extra = System.getenv("KAFKACHECK_PROPS");
    if (extra != null && !extra.isEmpty()) {
      try (var in = new java.io.FileInputStream(extra)) {
        p.load(in);
      }
    }
    return p;
  }

  static void produce(String bootstrap, String topic, int count, boolean idempotent) throws Exception {
    Properties p = base();
    p.put("bootstrap.servers", bootstrap);
    p.put("acks", "all");
    p.put("enable.idempotence", Boolean.toString(idempotent));
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      List<java.util.concurrent.Future<?>> acks = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        acks.add(producer.send(new ProducerRecord<>(topic, "k" + (i % 5), "v" + i)));
      }
      for (var f : acks) f.get();
    }
    System.out.println("produced " + count);
  }

  static Properties consumerProps(String bootstrap) throws java.io.IOException {
    Properties p = base();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    p.put("auto.offset.reset", "earliest");
    p.put("enable.auto.commit", "false");
    return p;
  }

  static void assign(String bootstrap, String topic, int partitions, int count) throws java.io.IOException {
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerProps(bootstrap))) {
      List<TopicPartition> tps = new ArrayList<>();
      for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
      c.assign(tps);
      c.seekToBeginning(tps);
      poll(c, count, false);
    }
  }

  static void group(String bootstrap, String topic, String group, int count) throws java.io.IOException {
    Properties p = consumerProps(bootstrap);
    p.put("group.id", group);
    p.put("group.protocol", "classic");
    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
      c.subscribe(List.of(topic));
      poll(c, count, true);
    }
  }

  static void poll(KafkaConsumer<String, String> c, int count, boolean commit) {
    int n = 0;
    long deadline = System.currentTimeMillis() + 60_000;
    while (n < count) {
      if (System.currentTimeMillis() > deadline) throw new RuntimeException("read " + n + " of " + count + " records in 60 s");
      for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
        System.out.println("record " + r.partition() + " " + r.offset() + " " + r.key() + " " + r.value());
        n++;
      }
      if (commit) c.commitSync();
    }
  }
}
