// The `shedlock.*` commands of the Curator peer (CuratorPeer.java dispatches them here): a
// participant that behaves as ShedLock's ZooKeeper provider (ZookeeperCuratorLockProvider,
// on Curator) does, as its source documents it — written for zk-recipes' interop tests, not
// taken from ShedLock:
//
//   * the lock of NAME is the PERSISTENT node ROOT/NAME (parents created as needed), never
//     deleted; its data is the lock-until instant, UTC ISO-8601 with exactly three fractional
//     digits (a DateTimeFormatter with appendInstant(3)), as UTF-8;
//   * lock: read the node with its stat; empty or unparsable data (Instant.parse) counts as
//     locked; a stored instant that is after now is locked; otherwise setData(now + atMost)
//     at the read version (BadVersion: someone else won); a missing node is created with
//     now + atMost (NodeExists: someone else won);
//   * unlock: setData WITHOUT a version of max(now, createdAt + atLeast).
//
// "now" is Instant.now() truncated to milliseconds, plus a per-command clock offset (for the
// tests of skewed clocks).

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

final class ShedLockCommands {
    private ShedLockCommands() {
    }

    private static final DateTimeFormatter THREE_DIGITS =
            new DateTimeFormatterBuilder().parseCaseInsensitive().appendInstant(3).toFormatter();

    /** A lock this peer holds: where, when taken (by its clock), for how long at least. */
    private static final class Held {
        final String path;
        final Instant createdAt;
        final long atLeastMs;
        final long offsetMs;

        Held(String path, Instant createdAt, long atLeastMs, long offsetMs) {
            this.path = path;
            this.createdAt = createdAt;
            this.atLeastMs = atLeastMs;
            this.offsetMs = offsetMs;
        }
    }

    private static final Map<String, Held> HELD = new ConcurrentHashMap<>();

    static String dispatch(String cmd, String[] a, Function<String, CuratorFramework> clients) throws Exception {
        switch (cmd) {
            case "shedlock.lock": {
                need(a, 5, "shedlock.lock <cid> <hid> <root/name> <atMostMs> <atLeastMs> [clockOffsetMs]");
                long offset = a.length > 5 ? Long.parseLong(a[5]) : 0;
                return lock(clients.apply(a[0]), a[0] + '\0' + a[1], a[2], Long.parseLong(a[3]),
                        Long.parseLong(a[4]), offset);
            }
            case "shedlock.unlock":
                need(a, 2, "shedlock.unlock <cid> <hid>");
                return unlock(clients.apply(a[0]), a[0] + '\0' + a[1]);
            case "shedlock.islocked": {
                need(a, 2, "shedlock.islocked <cid> <root/name> [clockOffsetMs]");
                long offset = a.length > 2 ? Long.parseLong(a[2]) : 0;
                byte[] data = clients.apply(a[0]).getData().forPath(a[1]);
                return Boolean.toString(isLocked(data, now(offset)));
            }
            case "shedlock.format":
                need(a, 1, "shedlock.format <epochMs>");
                return format(Instant.ofEpochMilli(Long.parseLong(a[0])));
            case "shedlock.parse":
                need(a, 1, "shedlock.parse <text>");
                try {
                    return Long.toString(Instant.parse(a[0]).toEpochMilli());
                } catch (DateTimeParseException e) {
                    return "unparsable";
                }
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    private static Instant now(long offsetMs) {
        return Instant.now().plusMillis(offsetMs).truncatedTo(ChronoUnit.MILLIS);
    }

    private static String format(Instant instant) {
        return THREE_DIGITS.format(instant.atOffset(ZoneOffset.UTC));
    }

    private static boolean isLocked(byte[] data, Instant now) {
        if (data == null || data.length == 0) {
            return true;
        }
        try {
            return Instant.parse(new String(data, StandardCharsets.UTF_8)).isAfter(now);
        } catch (DateTimeParseException e) {
            return true;
        }
    }

    /** "true <lockUntil>" when taken, "false" when someone else holds it. */
    private static String lock(CuratorFramework client, String key, String path, long atMostMs, long atLeastMs,
            long offsetMs) throws Exception {
        if (HELD.containsKey(key)) {
            throw new IllegalStateException("holder already holds " + HELD.get(key).path);
        }
        Instant createdAt = now(offsetMs);
        String until = format(createdAt.plusMillis(atMostMs));
        byte[] bytes = until.getBytes(StandardCharsets.UTF_8);
        try {
            Stat stat = new Stat();
            byte[] data = client.getData().storingStatIn(stat).forPath(path);
            if (isLocked(data, createdAt)) {
                return "false";
            }
            try {
                client.setData().withVersion(stat.getVersion()).forPath(path, bytes);
            } catch (KeeperException.BadVersionException e) {
                return "false";
            }
        } catch (KeeperException.NoNodeException e) {
            try {
                client.create().creatingParentsIfNeeded().withMode(CreateMode.PERSISTENT).forPath(path, bytes);
            } catch (KeeperException.NodeExistsException lost) {
                return "false";
            }
        }
        HELD.put(key, new Held(path, createdAt, atLeastMs, offsetMs));
        return "true " + until;
    }

    /** Writes max(now, createdAt + atLeast), unversioned; answers the instant written. */
    private static String unlock(CuratorFramework client, String key) throws Exception {
        Held held = HELD.remove(key);
        if (held == null) {
            throw new IllegalStateException("holder holds no shedlock");
        }
        Instant atLeastUntil = held.createdAt.plusMillis(held.atLeastMs);
        Instant now = now(held.offsetMs);
        String unlockTime = format(atLeastUntil.isAfter(now) ? atLeastUntil : now);
        client.setData().forPath(held.path, unlockTime.getBytes(StandardCharsets.UTF_8));
        return unlockTime;
    }

    private static void need(String[] a, int n, String usage) {
        if (a.length < n) {
            throw new IllegalArgumentException("usage: " + usage);
        }
    }
}
