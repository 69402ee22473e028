// The `gzip.*` commands of the Curator peer (CuratorPeer.java dispatches them here): node data
// written with Curator's `.compressed()` and read with `.decompressed()`, through the client's
// CompressionProvider (GzipCompressionProvider, Curator's default), and that provider's bytes
// for given data. Written for zk-recipes' interop tests of its gzip compression.
//
// Data words are lowercase hex, `-` for no bytes (as in CuratorPeer.java).

import java.util.function.Function;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.imps.GzipCompressionProvider;

final class CompressionCommands {
    private CompressionCommands() {
    }

    static String dispatch(String cmd, String[] a, Function<String, CuratorFramework> clients) throws Exception {
        switch (cmd) {
            case "gzip.create":
                need(a, 3, "gzip.create <cid> <path> <hexData|->");
                clients.apply(a[0]).create().compressed().creatingParentContainersIfNeeded()
                        .forPath(a[1], unhex(a[2]));
                return "created";
            case "gzip.set":
                need(a, 3, "gzip.set <cid> <path> <hexData|->");
                return Integer.toString(
                        clients.apply(a[0]).setData().compressed().forPath(a[1], unhex(a[2])).getVersion());
            case "gzip.get":
                need(a, 2, "gzip.get <cid> <path>");
                return hex(clients.apply(a[0]).getData().decompressed().forPath(a[1]));
            case "gzip.compress":
                need(a, 1, "gzip.compress <hexData|->");
                return hex(new GzipCompressionProvider().compress("/", unhex(a[0])));
            case "gzip.decompress":
                need(a, 1, "gzip.decompress <hexData|->");
                return hex(new GzipCompressionProvider().decompress("/", unhex(a[0])));
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    private static void need(String[] a, int n, String usage) {
        if (a.length < n) {
            throw new IllegalArgumentException("usage: " + usage);
        }
    }

    private static byte[] unhex(String s) {
        if (s.equals("-")) {
            return new byte[0];
        }
        if (s.length() % 2 != 0) {
            throw new IllegalArgumentException("odd-length hex data " + s);
        }
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    private static String hex(byte[] data) {
        if (data.length == 0) {
            return "-";
        }
        StringBuilder b = new StringBuilder(data.length * 2);
        for (byte x : data) {
            b.append(String.format("%02x", x & 0xff));
        }
        return b.toString();
    }
}
