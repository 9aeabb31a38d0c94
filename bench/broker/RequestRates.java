import java.util.Map;
import java.util.TreeMap;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * The broker's request and record counters, read once over JMX: run it twice some seconds
 * apart and divide the differences by the seconds between, for requests per second by type.
 *
 * <p>The local broker has no JMX port; give it one while it runs (loopback only):
 * {@code jcmd <pid> ManagementAgent.start jmxremote.port=49999 jmxremote.rmi.port=49999
 * jmxremote.host=127.0.0.1 jmxremote.authenticate=false jmxremote.ssl=false}, then
 * {@code java bench/broker/RequestRates.java 49999} (a single source file needs no build).
 */
public class RequestRates {
    public static void main(String[] args) throws Exception {
        if (args.length != 1 || !args[0].matches("[0-9]+")) {
            System.err.println("usage: java bench/broker/RequestRates.java JMX_PORT");
            System.exit(2);
        }
        JMXServiceURL url = new JMXServiceURL(
                "service:jmx:rmi:///jndi/rmi://127.0.0.1:" + args[0] + "/jmxrmi");
        JMXConnector connector;
        try {
            connector = JMXConnectorFactory.connect(url);
        } catch (java.io.IOException e) {
            System.err.println("RequestRates: no JMX agent answers on 127.0.0.1:" + args[0]
                    + "; open one with the jcmd line in this file's comment");
            System.exit(1);
            return;
        }
        try (connector) {
            MBeanServerConnection server = connector.getMBeanServerConnection();
            Map<String, Long> counts = new TreeMap<>();
            ObjectName requests =
                    new ObjectName("kafka.network:type=RequestMetrics,name=RequestsPerSec,*");
            for (ObjectName name : server.queryNames(requests, null)) {
                long count = ((Number) server.getAttribute(name, "Count")).longValue();
                counts.merge(name.getKeyProperty("request"), count, Long::sum);
            }
            ObjectName topics = new ObjectName("kafka.server:type=BrokerTopicMetrics,name=*,*");
            for (ObjectName name : server.queryNames(topics, null)) {
                if (name.getKeyProperty("topic") == null) {  // the all-topics totals only
                    long count = ((Number) server.getAttribute(name, "Count")).longValue();
                    counts.put("topics:" + name.getKeyProperty("name"), count);
                }
            }
            counts.forEach((key, count) -> System.out.println(key + " " + count));
        }
    }
}
