import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.io.JsonEncoder;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.BinaryMessageEncoder;

/**
 * Interop checker: the Apache Avro Java library reads and writes the project's wire format.
 *
 * <p>Run with Java's single-file source launcher: {@code java -cp "JARS/*" AvroInterop.java
 * MANIFEST}. The manifest holds one task per line, tab-separated, so a single JVM does all the
 * work of a test session:
 *
 * <pre>
 * decode  READER.avsc  IN.hex    OUT.json  [WRITER.avsc,WRITER.avsc...]
 * encode  SCHEMA.avsc  IN.json   OUT.hex
 * </pre>
 *
 * <p>decode: each line of IN.hex is a hex-encoded single-object message; it is decoded with
 * {@link BinaryMessageDecoder} for READER (which knows READER and the extra WRITER schemas by
 * fingerprint and resolves them to READER) and written to OUT.json in Avro's JSON encoding, one
 * record per line. encode: each line of IN.json is a record in Avro's JSON encoding; it is
 * written to OUT.hex as a hex-encoded message by {@link BinaryMessageEncoder}. A message that
 * fails becomes a line {@code !ERROR <exception class>: <message>}, so the caller sees which.
 */
public class AvroInterop {

  public static void main(String[] args) throws IOException {
    if (args.length != 1) {
      System.err.println("usage: AvroInterop MANIFEST");
      System.exit(2);
    }
    for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
      if (line.isBlank()) {
        continue;
      }
      String[] task = line.split("\t");
      switch (task[0]) {
        case "decode" -> decode(task);
        case "encode" -> encode(task);
        default -> throw new IllegalArgumentException("unknown task " + task[0]);
      }
    }
  }

  /** A fresh parser per file: each schema file defines its named types on its own. */
  private static Schema parse(String path) throws IOException {
    return new Schema.Parser().parse(new File(path));
  }

  private static void decode(String[] task) throws IOException {
    Schema reader = parse(task[1]);
    BinaryMessageDecoder<GenericRecord> decoder =
        new BinaryMessageDecoder<>(GenericData.get(), reader);
    if (task.length > 4 && !task[4].isEmpty()) {
      for (String writer : task[4].split(",")) {
        decoder.addSchema(parse(writer));
      }
    }
    GenericDatumWriter<GenericRecord> json = new GenericDatumWriter<>(reader);
    List<String> out = new ArrayList<>();
    for (String hex : Files.readAllLines(Path.of(task[2]), StandardCharsets.UTF_8)) {
      try {
        GenericRecord record = decoder.decode(HexFormat.of().parseHex(hex.strip()));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        JsonEncoder encoder = EncoderFactory.get().jsonEncoder(reader, bytes);
        json.write(record, encoder);
        encoder.flush();
        out.add(bytes.toString(StandardCharsets.UTF_8));
      } catch (Exception e) {
        out.add(error(e));
      }
    }
    write(task[3], out);
  }

  private static void encode(String[] task) throws IOException {
    Schema schema = parse(task[1]);
    BinaryMessageEncoder<GenericRecord> encoder =
        new BinaryMessageEncoder<>(GenericData.get(), schema);
    GenericDatumReader<GenericRecord> json = new GenericDatumReader<>(schema);
    List<String> out = new ArrayList<>();
    for (String line : Files.readAllLines(Path.of(task[2]), StandardCharsets.UTF_8)) {
      try {
        GenericRecord record = json.read(null, DecoderFactory.get().jsonDecoder(schema, line));
        ByteBuffer message = encoder.encode(record);
        byte[] bytes = new byte[message.remaining()];
        message.get(bytes);
        out.add(HexFormat.of().formatHex(bytes));
      } catch (Exception e) {
        out.add(error(e));
      }
    }
    write(task[3], out);
  }

  private static String error(Exception e) {
    String message = String.valueOf(e.getMessage()).replace('\n', ' ');
    return "!ERROR " + e.getClass().getName() + ": " + message;
  }

  private static void write(String path, List<String> lines) throws IOException {
    try (PrintWriter writer = new PrintWriter(path, StandardCharsets.UTF_8)) {
      for (String line : lines) {
        writer.print(line);
        writer.print('\n');
      }
    }
  }
}
