// The `shedlock` recipe of the Curator driver (CuratorBench.java dispatches it here): N
// replicas decide the scheduled ticks of one job through a ShedLock-shaped lock on Curator,
// the same workload as `zkr bench --recipe shedlock` (bench/README.md).
//
// The lock behaves as ShedLock's ZooKeeper provider (ZookeeperCuratorLockProvider) does, as its
// source documents it; written for this benchmark (ShedLock itself is not a dependency), as
// testing/src/curator/ShedLockCommands.java is for the interop tests:
//
//   * the lock of the job is the PERSISTENT node <run path>/job, never deleted; its data is the
//     lock-until instant, UTC ISO-8601 with exactly three fractional digits, as UTF-8;
//   * lock: read the node with its stat; empty or unparsable data counts as locked, so does an
//     instant after now; otherwise setData(now + atMost) at the read version (BadVersion:
//     someone else won); a missing node is created (parents as needed) with now + atMost
//     (NodeExists: someone else won);
//   * unlock: setData WITHOUT a version of max(now, lockedAt + atLeast) (atLeast is 0 here).
//
// Each client (its own CuratorFramework, one thread) is a replica. Per tick: all replicas meet
// (a CyclicBarrier whose action decides whether the tick runs and when it started), each tries
// the lock once, all meet again (the action checks that exactly one won and counts the tick
// as decided), then the winner unlocks. One operation = one tick decided; its latency runs
// from the tick's start to its last answer. A tick two replicas won is a violation; one that
// none won while nothing had failed is a violation too (the lock was free).

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

final class ShedLockBench {
    /** A tick's lockAtMostFor: far longer than a tick may take. */
    static final long AT_MOST_MS = 60_000;
    static final DateTimeFormatter THREE_DIGITS =
            new DateTimeFormatterBuilder().parseCaseInsensitive().appendInstant(3).toFormatter();

    final CuratorBench bench;
    final String path;
    final AtomicInteger winners = new AtomicInteger();
    final AtomicLong errors = new AtomicLong();
    /** The run's failed operations when the previous tick was checked. */
    long failedBefore;
    volatile boolean go;
    volatile long tickStart;
    long[] decided = new long[1024];
    int counted;

    ShedLockBench(CuratorBench bench) {
        this.bench = bench;
        this.path = bench.runPath + "/job";
    }

    static String run(CuratorBench bench) throws Exception {
        return new ShedLockBench(bench).ticks();
    }

    String ticks() throws Exception {
        int n = bench.clients.length;
        CyclicBarrier start = new CyclicBarrier(n, () -> {
            long now = System.nanoTime();
            go = now - bench.windowEnd < 0;
            tickStart = now;
        });
        CyclicBarrier answered = new CyclicBarrier(n, this::check);
        Thread[] threads = new Thread[n];
        for (int i = 0; i < n; i++) {
            CuratorFramework client = bench.clients[i];
            threads[i] = new Thread(() -> replica(client, start, answered), "replica-" + i);
            threads[i].setDaemon(true);
        }
        bench.startClock();
        for (Thread t : threads) {
            t.start();
        }
        long stuck = bench.joinAll(threads);
        long[] all = Arrays.copyOf(decided, counted);
        return bench.json(all, errors.get() + stuck, bench.args.seconds, ",\"replicas\":" + n);
    }

    /** Runs as the last replica answers a tick: checks its winners, counts it as decided. */
    void check() {
        long now = System.nanoTime();
        int won = winners.getAndSet(0);
        long failed = errors.get();
        if (won > 1 || (won == 0 && failed == 0)) {
            System.err.println("ShedLockBench: a tick had " + won + " winners");
            bench.violations.incrementAndGet();
        } else if (won == 0 && failed == failedBefore) {
            errors.incrementAndGet(); // an earlier failure (an unlock) left the name held
        }
        failedBefore = errors.get();
        boolean inWindow = tickStart - bench.warmupEnd >= 0 && now - bench.windowEnd <= 0;
        if (won == 1 && inWindow) {
            if (counted == decided.length) {
                decided = Arrays.copyOf(decided, counted * 2);
            }
            decided[counted++] = now - tickStart;
        }
    }

    void replica(CuratorFramework client, CyclicBarrier start, CyclicBarrier answered) {
        try {
            while (true) {
                start.await(CuratorBench.OP_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                if (!go) {
                    return;
                }
                Instant lockedAt = null;
                try {
                    lockedAt = lock(client);
                    if (lockedAt != null) {
                        winners.incrementAndGet();
                    }
                } catch (Exception e) {
                    System.err.println("ShedLockBench: lock: " + e);
                    errors.incrementAndGet();
                }
                answered.await(CuratorBench.OP_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                if (lockedAt != null) {
                    try {
                        unlock(client, lockedAt);
                    } catch (Exception e) {
                        System.err.println("ShedLockBench: unlock: " + e);
                        errors.incrementAndGet();
                    }
                }
            }
        } catch (Exception e) {
            // a replica that never came to a barrier broke it: the run ends with an error
            System.err.println("ShedLockBench: " + Thread.currentThread().getName() + ": " + e);
            errors.incrementAndGet();
        }
    }

    static Instant now() {
        return Instant.now().truncatedTo(ChronoUnit.MILLIS);
    }

    static byte[] format(Instant instant) {
        return THREE_DIGITS.format(instant.atOffset(ZoneOffset.UTC)).getBytes(StandardCharsets.UTF_8);
    }

    static boolean isLocked(byte[] data, Instant now) {
        if (data == null || data.length == 0) {
            return true;
        }
        try {
            return Instant.parse(new String(data, StandardCharsets.UTF_8)).isAfter(now);
        } catch (DateTimeParseException e) {
            return true;
        }
    }

    /** Takes the lock: the instant it was taken at, or null when another replica holds it. */
    Instant lock(CuratorFramework client) throws Exception {
        Instant lockedAt = now();
        byte[] until = format(lockedAt.plusMillis(AT_MOST_MS));
        try {
            Stat stat = new Stat();
            byte[] data = client.getData().storingStatIn(stat).forPath(path);
            if (isLocked(data, lockedAt)) {
                return null;
            }
            try {
                client.setData().withVersion(stat.getVersion()).forPath(path, until);
            } catch (KeeperException.BadVersionException e) {
                return null;
            }
        } catch (KeeperException.NoNodeException e) {
            try {
                client.create().creatingParentsIfNeeded().withMode(CreateMode.PERSISTENT).forPath(path, until);
            } catch (KeeperException.NodeExistsException lost) {
                return null;
            }
        }
        return lockedAt;
    }

    /** Writes max(now, lockedAt + atLeast) without a version; atLeast is 0. */
    void unlock(CuratorFramework client, Instant lockedAt) throws Exception {
        Instant now = now();
        client.setData().forPath(path, format(now.isAfter(lockedAt) ? now : lockedAt));
    }
}
