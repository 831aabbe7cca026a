import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * Starts DynamoDB Local listening on one address (the loopback one) instead of every interface.
 *
 * <p>DynamoDB Local has no host option and has no authentication: its Jetty server is built with
 * {@code new Server(port)}, which binds the wildcard address. This builds the server exactly as
 * {@code ServerRunner} does (same options, same start-up lines in the log), sets the host of its
 * connector before it opens, and refuses to keep running if the socket is bound anywhere but
 * the address asked for. Run as a single source file: {@code java -cp <jars>/*
 * -Dsvc.dynamodb.host=127.0.0.1 LoopbackDynamoDB.java -port N ...}.
 */
public final class LoopbackDynamoDB {
  public static void main(String[] args) throws Exception {
    String host = System.getProperty("svc.dynamodb.host");
    if (host == null || host.isEmpty()) fail("-Dsvc.dynamodb.host is required");
    InetAddress want = InetAddress.getByName(host);

    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Server server = jettyServer(proxy);
    Connector[] connectors = server.getConnectors();
    if (connectors.length == 0) fail("DynamoDB Local's Jetty server has no connector");
    for (Connector c : connectors) {
      if (!(c instanceof ServerConnector sc)) {
        fail("unexpected Jetty connector " + c.getClass().getName() + "; not starting");
        return;
      }
      sc.setHost(host);
    }
    try {
      proxy.start();
    } catch (Throwable e) {
      // Its threads may outlive main: without this, a port another process holds leaves a JVM
      // that never serves, while that other process answers on the port.
      fail("DynamoDB Local did not start: " + e);
    }

    for (Connector c : server.getConnectors()) {
      Object transport = ((ServerConnector) c).getTransport();
      if (!(transport instanceof ServerSocketChannel ch)) {
        fail("DynamoDB Local did not open its port (see the lines above)");
        return;
      }
      InetSocketAddress bound = (InetSocketAddress) ch.getLocalAddress();
      if (!bound.getAddress().equals(want)) {
        fail("DynamoDB Local is bound to " + bound + " instead of " + host);
      }
      System.out.println("Listening on " + bound.getAddress().getHostAddress() + ":" + bound.getPort());
    }
  }

  /** DynamoDBProxyServer keeps its Jetty server in a private field and offers no accessor. */
  private static Server jettyServer(DynamoDBProxyServer proxy) throws Exception {
    for (Field f : DynamoDBProxyServer.class.getDeclaredFields()) {
      if (Server.class.isAssignableFrom(f.getType())) {
        f.setAccessible(true);
        return (Server) f.get(proxy);
      }
    }
    fail("this DynamoDB Local version keeps no Jetty Server field; cannot bind it to one address");
    return null;
  }

  private static void fail(String why) {
    System.err.println("LoopbackDynamoDB: " + why);
    System.out.flush();
    Runtime.getRuntime().halt(2);
  }
}
