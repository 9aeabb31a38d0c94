package mesh.bench;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorSupplier;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;

/**
 * Message bytes to a decoded transaction, keeping the key (so nothing downstream repartitions).
 *
 * <p>A processor rather than a mapValues lambda so each task gets its own decoder, whose reused
 * buffers make it unsafe to share between stream threads.
 */
final class DecodeTransactions implements FixedKeyProcessor<byte[], byte[], GenericRecord> {
    private final TransactionDecoder decoder;
    private FixedKeyProcessorContext<byte[], GenericRecord> context;

    private DecodeTransactions(Schema schema) {
        this.decoder = new TransactionDecoder(schema);
    }

    static FixedKeyProcessorSupplier<byte[], byte[], GenericRecord> supplier(Schema schema) {
        return () -> new DecodeTransactions(schema);
    }

    @Override
    public void init(FixedKeyProcessorContext<byte[], GenericRecord> context) {
        this.context = context;
    }

    @Override
    public void process(FixedKeyRecord<byte[], byte[]> record) {
        context.forward(record.withValue(decoder.decode(record.value())));
    }
}
