package mesh.bench;

import java.util.Map;
import org.apache.avro.generic.GenericRecord;

/** detectors/large_amount/detector.py's rule: amount strictly above its currency's threshold. */
final class LargeAmountRule {
    private final Map<String, Double> thresholds;

    LargeAmountRule(Map<String, Double> thresholds) {
        this.thresholds = thresholds;
    }

    /** The alert's value, or null for the (many) records that raise none. */
    byte[] alertFor(GenericRecord transaction) {
        String currency = (String) transaction.get("currency");
        Double threshold = thresholds.get(currency);
        double amount = (Double) transaction.get("amount");
        if (threshold == null || amount <= threshold) {
            return null; // an unknown currency raises nothing, as in the detector
        }
        String customer = (String) transaction.get("customer_id");
        return Alerts.largeAmount(customer, amount, currency, amount / threshold);
    }
}
