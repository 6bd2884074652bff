// One Java KafkaConsumer (kafka-clients, group.protocol=classic), as a process of its own, driven over
// stdin/stdout with the same lines as pyclient.py:
//   java -cp LIBS:DIR JavaClient --bootstrap H:P --group G --topics t --client-id C --assignor range|roundrobin
//        [--instance-id I] [--session-ms 6000] [--heartbeat-ms 500] [--poll-ms 10000]
// Prints {"event":"started"}, {"event":"assigned","partitions":[...],"generation":G}, {"event":"revoked",...},
// {"event":"committed",...} / {"event":"commit_failed",...,"error":"..."}, {"event":"offset",...}, {"event":"closed"};
// reads `commit t-0 5`, `committed t-0`, `close` (end of stdin: close).  The consumer is used by the main thread only.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class JavaClient {
    static void say(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    static String names(Collection<TopicPartition> tps) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : tps) out.add(tp.topic() + "-" + tp.partition());
        Collections.sort(out);
        List<String> quoted = new ArrayList<>();
        for (String s : out) quoted.add(quote(s));
        return "[" + String.join(",", quoted) + "]";
    }

    static TopicPartition split(String name) {
        int dash = name.lastIndexOf('-');
        return new TopicPartition(name.substring(0, dash), Integer.parseInt(name.substring(dash + 1)));
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        a.put("--session-ms", "6000");
        a.put("--heartbeat-ms", "500");
        a.put("--poll-ms", "10000");
        a.put("--assignor", "range");
        for (int i = 0; i + 1 < argv.length; i += 2) a.put(argv[i], argv[i + 1]);
        Properties p = new Properties();
        p.put("bootstrap.servers", a.get("--bootstrap"));
        p.put("group.id", a.get("--group"));
        p.put("client.id", a.get("--client-id"));
        p.put("group.protocol", "classic");
        p.put("partition.assignment.strategy", a.get("--assignor").equals("range")
                ? "org.apache.kafka.clients.consumer.RangeAssignor"
                : "org.apache.kafka.clients.consumer.RoundRobinAssignor");
        p.put("session.timeout.ms", a.get("--session-ms"));
        p.put("heartbeat.interval.ms", a.get("--heartbeat-ms"));
        p.put("max.poll.interval.ms", a.get("--poll-ms"));
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        if (a.containsKey("--instance-id")) p.put("group.instance.id", a.get("--instance-id"));

        ConcurrentLinkedQueue<String[]> commands = new ConcurrentLinkedQueue<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (!line.isBlank()) commands.add(line.trim().split("\\s+"));
                }
            } catch (Exception e) {
                // stdin gone: a close
            }
            commands.add(new String[] {"close"});
        });
        reader.setDaemon(true);
        reader.start();

        KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p);
        c.subscribe(Arrays.asList(a.get("--topics").split(",")), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> ps) {
                say("{\"event\":\"revoked\",\"partitions\":" + names(ps) + ",\"generation\":"
                        + c.groupMetadata().generationId() + "}");
            }

            public void onPartitionsAssigned(Collection<TopicPartition> ps) {
                say("{\"event\":\"assigned\",\"partitions\":" + names(ps) + ",\"generation\":"
                        + c.groupMetadata().generationId() + "}");
            }
        });
        say("{\"event\":\"started\"}");
        while (true) {
            c.poll(Duration.ofMillis(100));
            String[] cmd;
            while ((cmd = commands.poll()) != null) {
                if (cmd[0].equals("close")) {
                    c.close();
                    say("{\"event\":\"closed\"}");
                    System.exit(0);
                }
                TopicPartition tp = split(cmd[1]);
                if (cmd[0].equals("commit")) {
                    long offset = Long.parseLong(cmd[2]);
                    try {
                        c.commitSync(Collections.singletonMap(tp, new OffsetAndMetadata(offset)));
                        say("{\"event\":\"committed\",\"partition\":" + quote(cmd[1]) + ",\"offset\":" + offset + "}");
                    } catch (Exception e) {
                        say("{\"event\":\"commit_failed\",\"partition\":" + quote(cmd[1]) + ",\"offset\":" + offset
                                + ",\"error\":" + quote(e.getClass().getSimpleName() + ": " + e.getMessage()) + "}");
                    }
                } else if (cmd[0].equals("committed")) {
                    OffsetAndMetadata got = c.committed(Collections.singleton(tp)).get(tp);
                    say("{\"event\":\"offset\",\"partition\":" + quote(cmd[1]) + ",\"offset\":"
                            + (got == null ? "null" : Long.toString(got.offset())) + "}");
                }
            }
        }
    }
}
