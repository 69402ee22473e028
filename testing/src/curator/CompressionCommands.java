// The `gzip.*` commands of the Curator peer (CuratorPeer.java dispatches them here): node data
// written with Curator's `.compressed()` and read with `.decompressed()`, through the client's
// CompressionProvider (GzipCompressionProvider, Curator's default), and that provider's bytes
// for given data. Written for zk-recipes' interop tests of its gzip compression.
//
// Data words are lowercase hex, `-` for no bytes (as in CuratorPeer.java).

import java.util.function.Function;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CreateBuilder;
import org.apache.curator.framework.imps.GzipCompressionProvider;
import org.apache.zookeeper.CreateMode;

final class CompressionCommands {
    private CompressionCommands() {
    }

    static String dispatch(String cmd, String[] a, Function<String, CuratorFramework> clients) throws Exception {
        switch (cmd) {
            case "gzip.create":
                need(a, 3, "gzip.create <cid> <path> <hexData|->");
                clients.apply(a[0]).create().compressed().creatingParentContainersIfNeeded()
                        .forPath(a[1], CuratorPeer.unhex(a[2]));
                return "created";
            case "gzip.create.protected":
                // what Curator 5.8's LeaderLatch writes under enableCompression(): a protected
                // ephemeral-sequential node holding the data, compressed
                need(a, 3, "gzip.create.protected <cid> <path> <hexData|->");
                // (5.4's fluent API has no compressed() beside withProtection(); the builder
                // keeps the switch, as 5.8's enableCompression() sets it)
                CreateBuilder builder = clients.apply(a[0]).create();
                builder.compressed();
                return builder.creatingParentContainersIfNeeded().withProtection()
                        .withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath(a[1], CuratorPeer.unhex(a[2]));
            case "gzip.set":
                need(a, 3, "gzip.set <cid> <path> <hexData|->");
                return Integer.toString(
                        clients.apply(a[0]).setData().compressed().forPath(a[1], CuratorPeer.unhex(a[2])).getVersion());
            case "gzip.get":
                need(a, 2, "gzip.get <cid> <path>");
                return CuratorPeer.hex(clients.apply(a[0]).getData().decompressed().forPath(a[1]));
            case "gzip.compress":
                need(a, 1, "gzip.compress <hexData|->");
                return CuratorPeer.hex(new GzipCompressionProvider().compress("/", CuratorPeer.unhex(a[0])));
            case "gzip.decompress":
                need(a, 1, "gzip.decompress <hexData|->");
                return CuratorPeer.hex(new GzipCompressionProvider().decompress("/", CuratorPeer.unhex(a[0])));
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    private static void need(String[] a, int n, String usage) {
        if (a.length < n) {
            throw new IllegalArgumentException("usage: " + usage);
        }
    }
}
