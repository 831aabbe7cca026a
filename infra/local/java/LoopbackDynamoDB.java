import com.almworks.sqlite4java.SQLiteConnection;
import com.almworks.sqlite4java.SQLiteStatement;
import java.io.File;
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
 *
 * <p>{@code LoopbackDynamoDB --wal <file>} instead puts a database file in write-ahead-log mode
 * and exits ({@link #writeAheadLog}); the stack runs it before starting DynamoDB Local on disk.
 */
public final class LoopbackDynamoDB {
  public static void main(String[] args) throws Exception {
    // Its own JVM, before DynamoDB Local's: DynamoDB Local loads its own copy of SQLite's native
    // library, and a second copy in the same process crashes it.
    if (args.length == 2 && "--wal".equals(args[0])) {
      writeAheadLog(new File(args[1]));
      return;
    }
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

  /**
   * Puts the database file in SQLite's write-ahead-log mode before DynamoDB Local opens it (the
   * mode is kept in the file, and DynamoDB Local does not set one). DynamoDB Local leaves SQLite
   * in its default rollback-journal mode, where each write it commits costs four syncs to disk
   * (journal and database); in WAL mode a commit appends to the log and syncs it once, with the
   * same durability (synchronous FULL: a commit is on disk before it is acknowledged). A new file
   * also gets 4 KB pages (DynamoDB Local creates 1 KB ones; items are often 2 KB). If the file
   * system cannot hold a WAL, SQLite keeps the old mode and this says so.
   */
  private static void writeAheadLog(File file) throws Exception {
    boolean fresh = !file.exists();
    SQLiteConnection db = new SQLiteConnection(file);
    try {
      db.open(true);
      if (fresh) db.exec("PRAGMA page_size=4096");
      SQLiteStatement st = db.prepare("PRAGMA journal_mode=WAL");
      String mode = st.step() ? st.columnString(0) : "?";
      st.dispose();
      System.out.println("SQLite journal mode: " + mode + (fresh ? " (new database)" : ""));
    } finally {
      db.dispose();
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
