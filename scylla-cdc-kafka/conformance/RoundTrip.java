// RoundTrip: checks that Kafka Connect's own JsonConverter writes our events back byte for
// byte. Reads the lines `dump_events` writes (`<table>\t{"key": "<JSON>", "value": "<JSON>",
// "headers": {...}}`) on stdin; each key and value is parsed with JsonConverter
// (schemas.enable as the first argument: `true`; without schemas, Connect's schemaless maps
// do not keep the field order) and converted back, and any difference is printed.
//
//   EVENTS_OUT=/tmp/events cargo test -p scylla-cdc-kafka --lib dump_events -- --ignored
//   CP=$(cat conformance/.cache/kafka-check-classpath-*.txt)   # after a kafka-check run
//   javac -cp "$CP" -d /tmp/rt scylla-cdc-kafka/conformance/RoundTrip.java
//   for f in /tmp/events/*schemas.tsv; do java -cp "$CP:/tmp/rt" RoundTrip true < $f; done
//
// Expected differences, both on the reading side or the JVM's: `-0.0` reads back as `0.0`
// (the converter reads floats as BigDecimal), and a float whose shortest digits Java 17's
// Float.toString does not find (1.1754944E-38 is 1.17549435E-38 there; Java 19+ agrees).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.json.JsonConverter;

/** Reads key/value JSON texts and checks JsonConverter writes the same bytes back. */
public class RoundTrip {
  public static void main(String[] args) throws Exception {
    boolean schemas = Boolean.parseBoolean(args[0]);
    JsonConverter keys = new JsonConverter();
    keys.configure(Map.of("schemas.enable", String.valueOf(schemas)), true);
    JsonConverter values = new JsonConverter();
    values.configure(Map.of("schemas.enable", String.valueOf(schemas)), false);
    ObjectMapper m = new ObjectMapper();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    int n = 0, bad = 0;
    while ((line = in.readLine()) != null) {
      String json = line.substring(line.indexOf('\t') + 1);
      JsonNode rec = m.readTree(json);
      for (String part : new String[] {"key", "value"}) {
        JsonNode t = rec.get(part);
        if (t == null || t.isNull()) continue;
        byte[] bytes = t.asText().getBytes(StandardCharsets.UTF_8);
        JsonConverter c = part.equals("key") ? keys : values;
        SchemaAndValue sv = c.toConnectData("t", bytes);
        byte[] back = c.fromConnectData("t", sv.schema(), sv.value());
        n++;
        String a = new String(bytes, StandardCharsets.UTF_8), b = new String(back, StandardCharsets.UTF_8);
        if (!a.equals(b)) {
          bad++;
          int i = 0;
          while (i < a.length() && i < b.length() && a.charAt(i) == b.charAt(i)) i++;
          System.out.println("DIFF " + part + " at " + i + "\n ours: " + a.substring(Math.max(0, i - 80), Math.min(a.length(), i + 80)) + "\n java: " + b.substring(Math.max(0, i - 80), Math.min(b.length(), i + 80)));
        }
      }
    }
    System.out.println(n + " records, " + bad + " differ");
  }
}
