package groupspec.driver;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;

/**
 * The driver: one JSON object per line on stdin, one reply per line on stdout (the protocol is in this
 * folder's README).  Everything else the JVM prints (Kafka's own logging) goes to stderr, so that nothing
 * but replies ever reaches stdout.
 *
 * A request arrives as Kafka's own JSON form of the request message at its version (what the generated
 * {@code *JsonConverter} classes read); it is written to bytes at that version and parsed back as a broker
 * parses what it receives, so the coordinator sees exactly what a client could send.  The response goes
 * back the same way: bytes at the request's version, parsed as a client parses them, in JSON.
 */
public final class Main {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** A request the coordinator has not answered yet. */
    private record Pending(String id, ApiKeys api, short version, CompletableFuture<AbstractResponse> future) {
    }

    private static final class Session {
        final Target target;
        final Map<String, Pending> pending = new LinkedHashMap<>();
        int correlation;

        Session(Target target) {
            this.target = target;
        }
    }

    private final Target.Factory factory;
    private final Map<Integer, Session> sessions = new HashMap<>();
    private int nextSession = 1;

    private Main(Target.Factory factory) {
        this.factory = factory;
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false,
            StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (args.length != 1) {
            System.err.println("usage: groupspec.driver.Main <target factory class>");
            System.exit(2);
        }
        Deterministic.install();
        Target.Factory factory = (Target.Factory) Class.forName(args[0]).getDeclaredConstructor().newInstance();
        Main main = new Main(factory);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ObjectNode ready = JSON.createObjectNode().put("ok", true).put("ready", true);
        ready.put("kafka", org.apache.kafka.common.utils.AppInfoParser.getVersion());
        out.println(JSON.writeValueAsString(ready));
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            ObjectNode reply;
            try {
                reply = main.handle(JSON.readTree(line));
            } catch (Refused e) {
                reply = JSON.createObjectNode().put("ok", false).put("kind", e.kind).put("error", e.getMessage());
            } catch (Throwable e) {
                reply = JSON.createObjectNode().put("ok", false).put("kind", "failed")
                    .put("error", e.getClass().getName() + ": " + e.getMessage());
                reply.put("trace", stack(e));
            }
            out.println(JSON.writeValueAsString(reply));
            out.flush();
        }
        for (Session s : main.sessions.values()) {
            s.target.close();
        }
    }

    /** What the driver cannot do with a command (`kind` says why: unsupported, malformed, ...). */
    static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final String kind;

        Refused(String kind, String message) {
            super(message);
            this.kind = kind;
        }
    }

    private ObjectNode handle(JsonNode cmd) throws Exception {
        String op = cmd.path("op").asText();
        if (op.equals("new")) {
            Map<String, Long> config = new LinkedHashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = cmd.path("config").fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                config.put(e.getKey(), e.getValue().asLong());
            }
            int id = nextSession++;
            sessions.put(id, new Session(factory.create(config)));
            // after the coordinator is made: whatever making one takes from the generator (the first time in a
            // JVM, say) does not shift the member ids its requests get
            Deterministic.reseed(cmd.path("seed").asLong(0));
            return ok().put("session", id);
        }
        Session s = sessions.get(cmd.path("session").asInt());
        if (s == null) {
            throw new Refused("malformed", "no session " + cmd.path("session"));
        }
        ObjectNode reply = ok();
        Target t = s.target;
        switch (op) {
            case "close":
                t.close();
                sessions.remove(cmd.path("session").asInt());
                return reply;
            case "send":
                reply.set("response", send(s, cmd));
                break;
            case "advance":
                t.timer().advance(cmd.path("ms").asLong());
                break;
            case "hold":
                t.appends().hold(cmd.path("hold").asBoolean());
                break;
            case "fail_next":
                t.appends().failNext(Errors.valueOf(cmd.path("error").asText()));
                break;
            case "complete":
                reply.put("completed", t.appends().complete(Errors.valueOf(cmd.path("error").asText())));
                break;
            case "unload":
                t.unload();
                break;
            case "begin_load":
                t.beginLoad();
                break;
            case "load":
                t.load();
                break;
            case "mark_dead":
                t.markDead(cmd.path("group").asText());
                break;
            case "expire_offsets":
                t.expireOffsets();
                break;
            case "snapshot": {
                t.settle();
                ObjectNode snap = t.snapshot(cmd.path("group").asText(), JSON.createObjectNode());
                reply.set("snapshot", snap == null ? JSON.nullNode() : snap);
                return reply;
            }
            default:
                throw new Refused("malformed", "unknown op " + op);
        }
        t.settle();
        reply.set("answered", answered(s));
        // where the log stands, for targets whose steps depend on it (checkers/kafka/inprocess.py)
        reply.put("writes_held", t.appends().anyHeld());
        reply.put("holding", t.appends().holding());
        reply.put("write_failing", t.appends().failing());
        reply.put("groups_in_use", t.anyGroupInUse());
        return reply;
    }

    private static ObjectNode ok() {
        return JSON.createObjectNode().put("ok", true);
    }

    /** A request: its response if the coordinator answered at once, else null (parked). */
    private JsonNode send(Session s, JsonNode cmd) throws Exception {
        ApiKeys api = ApiKeys.valueOf(cmd.path("api").asText());
        short version = (short) cmd.path("version").asInt();
        if (!api.isVersionSupported(version)) {
            throw new Refused("unsupported", api.name + " version " + version + " is not one Kafka "
                + org.apache.kafka.common.utils.AppInfoParser.getVersion() + " accepts ("
                + api.oldestVersion() + " to " + api.latestVersion() + ")");
        }
        ApiMessage data = read(api, cmd.path("body"), version);
        ByteBuffer bytes;
        try {
            bytes = MessageUtil.toByteBuffer(data, version);
        } catch (UnsupportedVersionException e) {
            throw new Refused("unsupported", e.getMessage());
        }
        AbstractRequest request = AbstractRequest.parseRequest(api, version, bytes).request;
        String client = cmd.path("client").isTextual() ? cmd.path("client").asText() : "";
        String host = cmd.path("host").isTextual() ? cmd.path("host").asText() : null;
        RequestHeader header = new RequestHeader(api, version, client, ++s.correlation);
        InetAddress address = host == null ? InetAddress.getLoopbackAddress()
            : InetAddress.getByAddress(host, new byte[]{127, 0, 0, 1});
        RequestContext ctx = new RequestContext(header, "groupspec-" + s.correlation, address,
            KafkaPrincipal.ANONYMOUS, ListenerName.forSecurityProtocol(SecurityProtocol.PLAINTEXT),
            SecurityProtocol.PLAINTEXT, ClientInformation.EMPTY, false);
        CompletableFuture<AbstractResponse> future;
        try {
            future = Apis.handle(s.target.coordinator(), ctx, request);
        } catch (RuntimeException e) {
            // what a coordinator throws reaches KafkaRequestHandler, whose RequestHandlerHelper.handleError
            // answers with the request's error response (UNKNOWN_SERVER_ERROR for what Kafka has no code for)
            future = CompletableFuture.completedFuture(request.getErrorResponse(e));
        }
        String id = cmd.path("id").asText();
        s.target.settle();
        if (future.isDone()) {
            return write(api, version, future.join());
        }
        s.pending.put(id, new Pending(id, api, version, future));
        return JSON.nullNode();
    }

    /** The parked requests answered since the last command, in the order they were sent. */
    private ArrayNode answered(Session s) throws Exception {
        ArrayNode out = JSON.createArrayNode();
        List<String> done = new ArrayList<>();
        for (Pending p : s.pending.values()) {
            if (p.future.isDone()) {
                out.add(JSON.createArrayNode().add(p.id).add(write(p.api, p.version, p.future.join())));
                done.add(p.id);
            }
        }
        done.forEach(s.pending::remove);
        return out;
    }

    private static ApiMessage read(ApiKeys api, JsonNode body, short version) throws Exception {
        Method m = converter(api, "Request").getMethod("read", JsonNode.class, short.class);
        return (ApiMessage) m.invoke(null, body, version);
    }

    private static JsonNode write(ApiKeys api, short version, AbstractResponse response) throws Exception {
        ByteBuffer bytes = MessageUtil.toByteBuffer(response.data(), version);
        ApiMessage parsed = AbstractResponse.parseResponse(api, bytes, version).data();
        Method m = converter(api, "Response").getMethod("write", parsed.getClass(), short.class);
        return (JsonNode) m.invoke(null, parsed, version);
    }

    private static Class<?> converter(ApiKeys api, String kind) throws ClassNotFoundException {
        return Class.forName("org.apache.kafka.common.message." + api.name + kind + "DataJsonConverter");
    }

    private static String stack(Throwable e) {
        java.io.StringWriter w = new java.io.StringWriter();
        e.printStackTrace(new java.io.PrintWriter(w));
        String s = w.toString();
        return s.length() > 4000 ? s.substring(0, 4000) : s;
    }
}
