// Benchmark driver for Apache Curator 5.x recipes, the "curator" peer of bench/compare.sh.
//
// Contract (bench/README.md): exactly one JSON line on stdout, everything else on stderr.
//
//   java CuratorBench --connect HOSTS --recipe R --clients N --seconds D
//        [--warmup-seconds W] [--base PATH] [--leases K] [--waiters W] [--tasks T]
//        [--paths P] [--skew uniform|zipf] [--holders N]
//
// One CuratorFramework (one ZooKeeper session) and one thread per client (T threads sharing
// it with --tasks T, timed loops only). With several hosts in --connect, client i connects to
// host i mod k alone, so the sessions spread over an ensemble's servers. The clients connect
// first (untimed), then all loop for the warm-up, then for the measured window; an operation
// counts when it starts and finishes inside the window. Exit 2 for an unknown recipe, 64 for
// other usage errors, 1 when the run could not be carried out.
//
// Two recipes need --clients 1 (one session):
//
//   entity   a lock per entity: P persistent stock nodes <run>/stock/<k> (k < P, default 1000,
//            ASCII decimal 1000000000, created untimed), the lock directories <run>/lock/<k>
//            (containers, created untimed) and T threads (--tasks) looping: pick k
//            (thread i's Random(i); uniform, or Zipf with exponent 1 over the ranks with
//            --skew zipf), take the InterProcessMutex of <run>/lock/<k> (one object per path,
//            shared by the threads; latency = ask to hold), read the stock with its stat, write
//            it less one at that version, release. A refused versioned write is a violation; so
//            is, after the window, an entity whose stock is not 1000000000 less the decrements
//            the threads counted. Extra fields tasks, paths, worker_ops_min, worker_ops_max.
//   holders  N (--holders, default 100000) distinct InterProcessMutex held at once, paths
//            <run>/g-<k/1000>/h-<k>, acquired by T threads (--tasks, default 64; thread j
//            takes k = j mod T, and releases the same ones). --seconds is required but unused:
//            seconds = the time until all N are held, ops = the locks held, p50/p99 = one acquire's latency;
//            extra fields holders, tasks, acquire_ms, release_ms, rss_mb, rss_mb_before,
//            heap_mb, heap_mb_before (used heap after System.gc()), rss_kb_per_lock. Gives up
//            (exit 1) when the acquires or the releases take over 300 s.
//
// Compiled and started by bench/peers/curator/run.sh against Debian's jars in /usr/share/java.

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

import org.apache.curator.RetryPolicy;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public final class CuratorBench {
    static final String PEER = "curator";
    static final List<String> RECIPES = Arrays.asList(
            "mutex", "rwlock", "semaphore", "semaphore_mutex", "counter", "shared_count", "double_barrier", "drain",
            "cache-load", "cache-delay", "raw", "raw_set", "shedlock", "entity", "holders");
    /** The recipes that run the timed loop (and so take --tasks, as holders does). */
    static final List<String> TIMED = Arrays.asList(
            "mutex", "rwlock", "semaphore", "semaphore_mutex", "counter", "shared_count", "raw", "raw_set", "entity");
    /** The recipes of one session, whose threads are --tasks (--clients must be 1). */
    static final List<String> ONE_SESSION = Arrays.asList("entity", "holders");

    /** How long one blocking call may take before it counts as an error. */
    static final long OP_TIMEOUT_MS = 60_000;
    /**
     * DistributedAtomicLong's own retry policy for optimistic updates: 10 tries, 10 ms apart
     * (the policy of Curator's documentation examples). When it runs out under contention the
     * increment reports succeeded() == false; that is an error here, not hidden by retrying.
     */
    static final int ATOMIC_RETRIES = 10;
    static final int ATOMIC_RETRY_SLEEP_MS = 10;
    /** entity: every stock node's value when a run starts. */
    static final long STOCK = 1_000_000_000L;
    /** holders: the acquires, and then the releases, give up after this long. */
    static final long HOLDERS_LIMIT_MS = 300_000;
    /** How long the cleanup of the entity and holders nodes may take. */
    static final long CLEANUP_LIMIT_MS = 120_000;

    /** The real stdout: only the result line goes there. */
    static PrintStream out;

    // ----------------------------------------------------------------------------------------
    // Arguments

    static final class Args {
        String connect;
        String recipe;
        int clients = -1;
        int tasks = 1;
        boolean tasksGiven;
        double seconds = -1;
        double warmup = 2.0;
        String base = "/bench";
        int leases = 2;
        int waiters = 500;
        int nodes = 10_000;
        int rate = 1_000;
        int paths = 1000;
        String skew = "uniform";
        int holders = 100_000;
    }

    static final class UsageError extends Exception {
        UsageError(String message) {
            super(message);
        }
    }

    static Args parse(String[] argv) throws UsageError {
        Args a = new Args();
        for (int i = 0; i < argv.length; i++) {
            String key = argv[i];
            String value;
            int eq = key.indexOf('=');
            if (key.startsWith("--") && eq > 0) {
                value = key.substring(eq + 1);
                key = key.substring(0, eq);
            } else {
                if (i + 1 >= argv.length) {
                    throw new UsageError(key + " needs a value");
                }
                value = argv[++i];
            }
            try {
                switch (key) {
                    case "--connect": a.connect = value; break;
                    case "--recipe": a.recipe = value; break;
                    case "--clients": a.clients = Integer.parseInt(value); break;
                    case "--tasks": a.tasks = Integer.parseInt(value); a.tasksGiven = true; break;
                    case "--seconds": a.seconds = Double.parseDouble(value); break;
                    case "--warmup-seconds": a.warmup = Double.parseDouble(value); break;
                    case "--base": a.base = value; break;
                    case "--leases": a.leases = Integer.parseInt(value); break;
                    case "--waiters": a.waiters = Integer.parseInt(value); break;
                    case "--nodes": a.nodes = Integer.parseInt(value); break;
                    case "--rate": a.rate = Integer.parseInt(value); break;
                    case "--paths": a.paths = Integer.parseInt(value); break;
                    case "--skew": a.skew = value; break;
                    case "--holders": a.holders = Integer.parseInt(value); break;
                    default: throw new UsageError("unknown option " + key);
                }
            } catch (NumberFormatException e) {
                throw new UsageError(key + ": not a number: " + value);
            }
        }
        if (a.connect == null || a.recipe == null || a.clients < 1 || a.seconds <= 0) {
            throw new UsageError("--connect, --recipe, --clients (>= 1) and --seconds (> 0) are required");
        }
        if (a.warmup < 0 || a.leases < 1 || a.waiters < 1 || a.tasks < 1) {
            throw new UsageError("--warmup-seconds must be >= 0, --leases, --waiters and --tasks >= 1");
        }
        if (a.paths < 1 || a.holders < 1) {
            throw new UsageError("--paths and --holders must be >= 1");
        }
        if (!a.skew.equals("uniform") && !a.skew.equals("zipf")) {
            throw new UsageError("--skew must be uniform or zipf, not " + a.skew);
        }
        if (ONE_SESSION.contains(a.recipe) && a.clients != 1) {
            throw new UsageError(a.recipe + " runs on one session: --clients must be 1 (threads: --tasks)");
        }
        if (a.recipe.equals("holders") && !a.tasksGiven) {
            a.tasks = 64;
        }
        while (a.base.length() > 1 && a.base.endsWith("/")) {
            a.base = a.base.substring(0, a.base.length() - 1);
        }
        if (!a.base.startsWith("/")) {
            throw new UsageError("--base must be an absolute path");
        }
        return a;
    }

    // ----------------------------------------------------------------------------------------
    // Entry point

    public static void main(String[] argv) {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Args args;
        try {
            args = parse(argv);
        } catch (UsageError e) {
            System.err.println("CuratorBench: " + e.getMessage());
            System.err.println("usage: --connect HOSTS --recipe R --clients N --seconds D [--warmup-seconds W]"
                    + " [--base PATH] [--leases K] [--waiters W] [--tasks T] [--paths P] [--skew uniform|zipf]"
                    + " [--holders N]");
            System.exit(64);
            return;
        }
        if (!RECIPES.contains(args.recipe)) {
            System.err.println("CuratorBench: unknown recipe " + args.recipe + " (known: " + String.join(", ", RECIPES) + ")");
            System.exit(2);
            return;
        }
        if (args.tasks > 1 && !TIMED.contains(args.recipe) && !args.recipe.equals("holders")) {
            System.err.println("CuratorBench: --tasks applies to the timed loops, not to " + args.recipe);
            System.exit(2);
            return;
        }
        int code;
        try {
            String line = new CuratorBench(args).run();
            out.println(line);
            out.flush();
            code = 0;
        } catch (Throwable t) {
            System.err.println("CuratorBench: run failed: " + t);
            t.printStackTrace(System.err);
            code = 1;
        }
        // Curator's and ZooKeeper's threads are not all daemons: leave without waiting for them.
        System.exit(code);
    }

    // ----------------------------------------------------------------------------------------
    // A run

    final Args args;
    final String runPath;
    final CuratorFramework[] clients;
    /** Holders inside the critical section right now (mutex-like recipes, semaphores). */
    final AtomicInteger holders = new AtomicInteger();
    final AtomicInteger readers = new AtomicInteger();
    final AtomicInteger writers = new AtomicInteger();
    final AtomicLong violations = new AtomicLong();
    /** Successful increments over the whole run (warm-up and window), for the counter check. */
    final AtomicLong increments = new AtomicLong();
    /** entity: the stock decrements written, per entity, over the whole run (warm-up and window). */
    AtomicLongArray decrements;
    /** entity: each entity's mutex, made on first use and shared by the threads. */
    final ConcurrentHashMap<Integer, InterProcessMutex> entityLocks = new ConcurrentHashMap<>();
    /** entity with --skew zipf: the cumulative weights of ranks 0..P-1 (weight 1/(k+1)); null: uniform. */
    double[] zipfCdf;

    long startNanos;
    long warmupEnd;
    long windowEnd;

    CuratorBench(Args args) {
        this.args = args;
        this.runPath = args.base + "/" + args.recipe + "-" + ProcessHandle.current().pid() + "-"
                + Long.toHexString(System.nanoTime() & 0xffffffL);
        this.clients = new CuratorFramework[args.clients];
    }

    String run() throws Exception {
        if (args.recipe.equals("holders")) {
            System.err.printf(Locale.ROOT, "CuratorBench: holders, %d locks by %d threads on %s%n",
                    args.holders, Math.min(args.tasks, args.holders), runPath);
        } else {
            System.err.printf(Locale.ROOT, "CuratorBench: %s, %d clients, %.1f s (+%.1f s warm-up) on %s%n",
                    args.recipe, args.clients, args.seconds, args.warmup, runPath);
        }
        try {
            connectAll();
            clients[0].create().creatingParentsIfNeeded().forPath(runPath);
            if (args.recipe.equals("drain")) {
                return drain();
            }
            if (args.recipe.equals("cache-load")) {
                return cacheLoad();
            }
            if (args.recipe.equals("cache-delay")) {
                return cacheDelay();
            }
            if (args.recipe.equals("shedlock")) {
                return ShedLockBench.run(this); // ShedLockBench.java
            }
            if (args.recipe.equals("holders")) {
                return holders();
            }
            return loop();
        } finally {
            cleanup();
        }
    }

    void connectAll() throws Exception {
        for (int i = 0; i < clients.length; i++) {
            CuratorFramework client = CuratorFrameworkFactory.builder()
                    .connectString(serverFor(args.connect, i))
                    .sessionTimeoutMs(30_000)
                    .connectionTimeoutMs(15_000)
                    .retryPolicy(new ExponentialBackoffRetry(100, 3))
                    .build();
            clients[i] = client;
            client.start();
        }
        for (CuratorFramework client : clients) {
            if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("could not connect to " + args.connect);
            }
        }
    }

    /** Client i's server: host i mod k of a connect string naming k hosts (its chroot kept). */
    static String serverFor(String connect, int i) {
        int slash = connect.indexOf('/');
        String hosts = slash < 0 ? connect : connect.substring(0, slash);
        String chroot = slash < 0 ? "" : connect.substring(slash);
        List<String> list = new ArrayList<>();
        for (String h : hosts.split(",")) {
            if (!h.trim().isEmpty()) {
                list.add(h.trim());
            }
        }
        return list.size() <= 1 ? connect : list.get(i % list.size()) + chroot;
    }

    void cleanup() {
        if (clients[0] != null) {
            try {
                cleanupMany();
            } catch (Exception e) {
                System.err.println("CuratorBench: cleanup of " + runPath + " failed: " + e);
            }
            try {
                clients[0].delete().deletingChildrenIfNeeded().forPath(runPath);
            } catch (Exception e) {
                System.err.println("CuratorBench: cleanup of " + runPath + " failed: " + e);
            }
        }
        for (CuratorFramework client : clients) {
            if (client != null) {
                try {
                    client.close();
                } catch (Exception ignored) {
                    // exiting anyway
                }
            }
        }
    }

    // ----------------------------------------------------------------------------------------
    // The timed loop shared by all recipes but drain

    /** One client's operation. Returns the latency in nanoseconds (ask to hold), or -1 on failure. */
    abstract class Worker {
        final int index;
        final CuratorFramework client;
        long[] latencies = new long[1024];
        int counted;
        long errors;

        Worker(int index) {
            this.index = index;
            this.client = clients[index / args.tasks];
        }

        /** Creates the recipe objects; runs before the clock starts. */
        void prepare() throws Exception {}

        /** Closes the recipe objects; runs after the clock stopped. */
        void close() throws Exception {}

        abstract long once() throws Exception;

        void record(long latency) {
            if (counted == latencies.length) {
                latencies = Arrays.copyOf(latencies, counted * 2);
            }
            latencies[counted++] = latency;
        }

        void loop() {
            while (true) {
                long start = System.nanoTime();
                if (start - windowEnd >= 0) {
                    return;
                }
                long latency;
                try {
                    latency = once();
                } catch (Exception e) {
                    System.err.println("CuratorBench: client " + index + ": " + e);
                    latency = -1;
                }
                long end = System.nanoTime();
                boolean inWindow = start - warmupEnd >= 0 && start - windowEnd < 0;
                if (latency < 0) {
                    errors++; // warm-up failures count too: a failure is never hidden
                    sleepQuietly(10); // no hot loop on a broken connection
                } else if (inWindow && end - windowEnd <= 0) {
                    record(latency);
                }
            }
        }
    }

    /** Enters a critical section guarded by `limit`, counting a violation when it is exceeded. */
    void enter(int limit) {
        if (holders.incrementAndGet() > limit) {
            violations.incrementAndGet();
        }
    }

    void leave() {
        holders.decrementAndGet();
    }

    /** A worker that acquires, holds an empty critical section and releases a lock. */
    Worker lockWorker(int i, java.util.function.Function<CuratorFramework, InterProcessLock> make) {
        return new Worker(i) {
            final InterProcessLock mutex = make.apply(client);

            @Override
            long once() throws Exception {
                long t0 = System.nanoTime();
                if (!mutex.acquire(OP_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                    return -1;
                }
                long latency = System.nanoTime() - t0;
                enter(1);
                leave();
                mutex.release();
                return latency;
            }
        };
    }

    Worker worker(int i) {
        final String path = runPath + "/lock";
        switch (args.recipe) {
            case "mutex":
                return lockWorker(i, c -> new InterProcessMutex(c, path));
            case "semaphore_mutex":
                return lockWorker(i, c -> new InterProcessSemaphoreMutex(c, path));
            case "rwlock":
                return new Worker(i) {
                    final InterProcessReadWriteLock lock = new InterProcessReadWriteLock(client, path);
                    final Random random = new Random(index);

                    @Override
                    long once() throws Exception {
                        boolean read = random.nextInt(100) < 75;
                        InterProcessMutex m = read ? lock.readLock() : lock.writeLock();
                        long t0 = System.nanoTime();
                        if (!m.acquire(OP_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                            return -1;
                        }
                        long latency = System.nanoTime() - t0;
                        if (read) {
                            readers.incrementAndGet();
                            if (writers.get() > 0) {
                                violations.incrementAndGet();
                            }
                            readers.decrementAndGet();
                        } else {
                            int w = writers.incrementAndGet();
                            if (w > 1 || readers.get() > 0) {
                                violations.incrementAndGet();
                            }
                            writers.decrementAndGet();
                        }
                        m.release();
                        return latency;
                    }
                };
            case "semaphore":
                return new Worker(i) {
                    final InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, args.leases);

                    @Override
                    long once() throws Exception {
                        long t0 = System.nanoTime();
                        Lease lease = semaphore.acquire(OP_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                        if (lease == null) {
                            return -1;
                        }
                        long latency = System.nanoTime() - t0;
                        enter(args.leases);
                        leave();
                        semaphore.returnLease(lease);
                        return latency;
                    }
                };
            case "counter":
                return new Worker(i) {
                    final DistributedAtomicLong counter = new DistributedAtomicLong(client, runPath + "/counter",
                            new RetryNTimes(ATOMIC_RETRIES, ATOMIC_RETRY_SLEEP_MS));

                    @Override
                    long once() throws Exception {
                        long t0 = System.nanoTime();
                        AtomicValue<Long> v = counter.increment();
                        long latency = System.nanoTime() - t0;
                        if (!v.succeeded()) {
                            return -1; // Curator gave up (contention): an error
                        }
                        increments.incrementAndGet();
                        return latency;
                    }
                };
            case "shared_count":
                return new Worker(i) {
                    SharedCount count;

                    @Override
                    void prepare() throws Exception {
                        count = new SharedCount(client, runPath + "/count", 0);
                        count.start();
                    }

                    @Override
                    long once() throws Exception {
                        long t0 = System.nanoTime();
                        while (true) {
                            VersionedValue<Integer> v = count.getVersionedValue();
                            if (count.trySetCount(v, v.getValue() + 1)) {
                                break;
                            }
                            if (System.nanoTime() - t0 > TimeUnit.MILLISECONDS.toNanos(OP_TIMEOUT_MS)) {
                                return -1;
                            }
                        }
                        long latency = System.nanoTime() - t0;
                        increments.incrementAndGet();
                        return latency;
                    }

                    @Override
                    void close() throws Exception {
                        count.close();
                    }
                };
            case "raw": // the create+delete floor: an ephemeral node created and deleted
                return new Worker(i) {
                    final String node = runPath + "/raw-" + index;

                    @Override
                    long once() throws Exception {
                        long t0 = System.nanoTime();
                        client.create().withMode(CreateMode.EPHEMERAL).forPath(node);
                        client.delete().forPath(node);
                        return System.nanoTime() - t0;
                    }
                };
            case "raw_set": // the setData floor: versioned sets of one node, back to back
                return new Worker(i) {
                    final String node = runPath + "/set-" + index;
                    int version;

                    @Override
                    void prepare() throws Exception {
                        client.create().forPath(node, new byte[8]);
                        version = client.checkExists().forPath(node).getVersion();
                    }

                    @Override
                    long once() throws Exception {
                        long t0 = System.nanoTime();
                        byte[] data = ByteBuffer.allocate(8).putLong(version + 1L).array();
                        version = client.setData().withVersion(version).forPath(node, data).getVersion();
                        return System.nanoTime() - t0;
                    }
                };
            case "entity":
                return entityWorker(i);
            default:
                throw new IllegalArgumentException("no loop worker for " + args.recipe);
        }
    }

    String loop() throws Exception {
        if (args.recipe.equals("double_barrier")) {
            return doubleBarrier();
        }
        boolean entity = args.recipe.equals("entity");
        if (entity) {
            prepareEntities();
        }
        Worker[] workers = new Worker[clients.length * args.tasks];
        for (int i = 0; i < workers.length; i++) {
            workers[i] = worker(i);
            workers[i].prepare();
        }
        long initial = 0;
        boolean counts = args.recipe.equals("counter") || args.recipe.equals("shared_count");
        if (counts) {
            initial = readCount();
        }
        Thread[] threads = new Thread[workers.length];
        CountDownLatch go = new CountDownLatch(1);
        for (int i = 0; i < workers.length; i++) {
            Worker w = workers[i];
            threads[i] = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                w.loop();
            }, "client-" + i);
            threads[i].setDaemon(true);
            threads[i].start();
        }
        startClock();
        go.countDown();
        long stuck = joinAll(threads);

        long errors = stuck;
        int total = 0;
        for (Worker w : workers) {
            errors += w.errors;
            total += w.counted;
        }
        long[] all = new long[total];
        int k = 0;
        for (Worker w : workers) {
            System.arraycopy(w.latencies, 0, all, k, w.counted);
            k += w.counted;
        }
        if (counts) {
            long fin = readCount();
            if (fin - initial != increments.get()) {
                System.err.printf(Locale.ROOT, "CuratorBench: counter moved by %d, successful increments %d%n",
                        fin - initial, increments.get());
                violations.incrementAndGet();
            }
        }
        if (entity) {
            violations.addAndGet(verifyEntities());
        }
        for (Worker w : workers) {
            try {
                w.close();
            } catch (Exception ignored) {
                // closing only stops watchers; the sessions close next
            }
        }
        String spread = workerSpread(workers);
        String extra = entity ? ",\"paths\":" + args.paths + (spread == null ? "" : spread) : spread;
        return json(all, errors, args.seconds, extra);
    }

    /**
     * With more than one worker (a client, or a thread of one): the fewest and the most
     * operations one worker counted in the window, as the other drivers report them.
     */
    static String workerSpread(Worker[] workers) {
        if (workers.length < 2) {
            return null;
        }
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (Worker w : workers) {
            min = Math.min(min, w.counted);
            max = Math.max(max, w.counted);
        }
        return String.format(Locale.ROOT, ",\"worker_ops_min\":%d,\"worker_ops_max\":%d", min, max);
    }

    /** The counter's current value, read from ZooKeeper (not from a cache). */
    long readCount() throws Exception {
        if (args.recipe.equals("counter")) {
            AtomicValue<Long> v = new DistributedAtomicLong(clients[0], runPath + "/counter",
                    new RetryNTimes(ATOMIC_RETRIES, ATOMIC_RETRY_SLEEP_MS)).get();
            if (!v.succeeded()) {
                throw new IllegalStateException("cannot read the counter");
            }
            return v.postValue();
        }
        byte[] data = clients[0].getData().forPath(runPath + "/count");
        return data.length == 4 ? ByteBuffer.wrap(data).getInt() : 0;
    }

    void startClock() {
        startNanos = System.nanoTime();
        warmupEnd = startNanos + (long) (args.warmup * 1e9);
        windowEnd = warmupEnd + (long) (args.seconds * 1e9);
    }

    /** Joins the client threads; returns how many did not finish in time (each an error). */
    long joinAll(Thread[] threads) throws InterruptedException {
        long deadline = windowEnd + TimeUnit.MILLISECONDS.toNanos(OP_TIMEOUT_MS + 30_000);
        long stuck = 0;
        for (Thread t : threads) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            t.join(Math.max(left, 1));
            if (t.isAlive()) {
                StringBuilder where = new StringBuilder();
                for (StackTraceElement e : t.getStackTrace()) {
                    where.append("\n    at ").append(e);
                }
                System.err.println("CuratorBench: " + t.getName() + " did not finish; it is" + where);
                stuck++;
            }
        }
        return stuck;
    }

    // ----------------------------------------------------------------------------------------
    // entity: a lock per entity, the stock of each decremented under its lock

    String stockPath(int k) {
        return runPath + "/stock/" + k;
    }

    /** Creates the P stock nodes (untimed) and the skew's weights. */
    void prepareEntities() throws Exception {
        int p = args.paths;
        decrements = new AtomicLongArray(p);
        if (args.skew.equals("zipf")) {
            zipfCdf = new double[p];
            double total = 0;
            for (int k = 0; k < p; k++) {
                total += 1.0 / (k + 1);
                zipfCdf[k] = total;
            }
        }
        String dir = runPath + "/stock";
        clients[0].create().forPath(dir, new byte[0]);
        List<String> paths = new ArrayList<>(p + 1);
        paths.add(dir);
        for (int k = 0; k < p; k++) {
            paths.add(stockPath(k));
        }
        createPipelined(paths, Long.toString(STOCK).getBytes(StandardCharsets.US_ASCII));
        // each entity's lock directory exists (a container), as in a service that has run a
        // while: the window measures locking, not each directory's first creation
        String locks = runPath + "/lock";
        clients[0].create().withMode(CreateMode.CONTAINER).forPath(locks, new byte[0]);
        List<String> lockDirs = new ArrayList<>(p + 1);
        lockDirs.add(locks);
        for (int k = 0; k < p; k++) {
            lockDirs.add(locks + "/" + k);
        }
        createPipelined(lockDirs, new byte[0], CreateMode.CONTAINER);
    }

    /** An entity number: uniform over 0..P-1, or Zipf-distributed (rank k with weight 1/(k+1)). */
    int pickEntity(Random random) {
        int p = args.paths;
        if (zipfCdf == null) {
            return random.nextInt(p);
        }
        double x = random.nextDouble() * zipfCdf[p - 1];
        int lo = 0;
        int hi = p - 1;
        while (lo < hi) { // the first rank whose cumulative weight reaches x
            int mid = (lo + hi) >>> 1;
            if (zipfCdf[mid] < x) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    static long parseStock(String path, byte[] data) {
        String s = new String(data, StandardCharsets.US_ASCII);
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new IllegalStateException(path + " holds " + s + ", not a number");
        }
    }

    /** Thread i's loop: lock an entity, decrement its stock at the version read, release. */
    Worker entityWorker(int i) {
        return new Worker(i) {
            final Random random = new Random(index);

            @Override
            long once() throws Exception {
                int k = pickEntity(random);
                InterProcessMutex mutex =
                        entityLocks.computeIfAbsent(k, key -> new InterProcessMutex(client, runPath + "/lock/" + key));
                long t0 = System.nanoTime();
                if (!mutex.acquire(OP_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                    return -1;
                }
                long latency = System.nanoTime() - t0;
                try {
                    String stock = stockPath(k);
                    Stat stat = new Stat();
                    long left = parseStock(stock, client.getData().storingStatIn(stat).forPath(stock));
                    try {
                        client.setData().withVersion(stat.getVersion())
                                .forPath(stock, Long.toString(left - 1).getBytes(StandardCharsets.US_ASCII));
                        decrements.incrementAndGet(k);
                    } catch (KeeperException.BadVersionException e) {
                        System.err.println("CuratorBench: entity " + k
                                + ": a versioned write under the lock was refused (another writer)");
                        violations.incrementAndGet();
                    }
                } finally {
                    mutex.release();
                }
                return latency;
            }
        };
    }

    /** After the window: the entities whose stock is not STOCK less the decrements written. */
    long verifyEntities() throws Exception {
        long bad = 0;
        for (int k = 0; k < args.paths; k++) {
            String stock = stockPath(k);
            long left = parseStock(stock, clients[0].getData().forPath(stock));
            long sold = decrements.get(k);
            if (STOCK - left != sold) {
                System.err.printf(Locale.ROOT, "CuratorBench: entity %d: stock %d, but %d sold of %d%n", k, left, sold, STOCK);
                bad++;
            }
        }
        return bad;
    }

    // ----------------------------------------------------------------------------------------
    // holders: N distinct locks held at once by one session

    String holders() throws Exception {
        final int n = args.holders;
        final int t = Math.min(args.tasks, n);
        final CuratorFramework c = clients[0];
        double heapBefore = heapUsedMb();
        double before = rssMb();
        final InterProcessMutex[] locks = new InterProcessMutex[n];
        final long[] waits = new long[n];
        final AtomicLong errors = new AtomicLong();
        final java.util.concurrent.atomic.AtomicBoolean late = new java.util.concurrent.atomic.AtomicBoolean();
        final CountDownLatch acquired = new CountDownLatch(t);
        final CountDownLatch releaseGo = new CountDownLatch(1);
        final CountDownLatch released = new CountDownLatch(t);
        final long t0 = System.nanoTime();
        final long deadline = t0 + TimeUnit.MILLISECONDS.toNanos(HOLDERS_LIMIT_MS);
        for (int j = 0; j < t; j++) {
            final int first = j;
            Thread thread = new Thread(() -> {
                // Curator's mutex belongs to the thread that took it: this thread releases its own.
                for (int k = first; k < n; k += t) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        late.set(true); // the run gives up; the main thread reports it
                        break;
                    }
                    InterProcessMutex m = new InterProcessMutex(c, runPath + "/g-" + (k / 1000) + "/h-" + k);
                    long s = System.nanoTime();
                    try {
                        if (!m.acquire(left, TimeUnit.NANOSECONDS)) {
                            late.set(true);
                            break;
                        }
                        waits[k] = System.nanoTime() - s;
                        locks[k] = m;
                    } catch (Exception e) {
                        holderError("lock " + k + ": " + e, errors);
                    }
                }
                acquired.countDown();
                try {
                    releaseGo.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int k = first; k < n; k += t) {
                    if (locks[k] == null) {
                        continue;
                    }
                    try {
                        if (!locks[k].isOwnedByCurrentThread()) {
                            System.err.println("CuratorBench: lock " + k + " is not held by the thread that took it");
                            violations.incrementAndGet();
                        }
                        locks[k].release();
                    } catch (Exception e) {
                        holderError("release of lock " + k + ": " + e, errors);
                    }
                }
                released.countDown();
            }, "holder-" + j);
            thread.setDaemon(true);
            thread.start();
        }
        if (!acquired.await(Math.max(deadline - System.nanoTime(), 0) + 5_000_000_000L, TimeUnit.NANOSECONDS)
                || late.get()) {
            throw new IllegalStateException(n + " locks not acquired in " + HOLDERS_LIMIT_MS / 1000 + " s");
        }
        long acquireNanos = System.nanoTime() - t0;
        int held = 0;
        for (InterProcessMutex m : locks) {
            if (m != null) {
                held++;
            }
        }
        if (held + errors.get() != n) {
            System.err.println("CuratorBench: " + held + " locks held and " + errors.get() + " failed, of " + n);
            violations.incrementAndGet();
        }
        double heap = heapUsedMb();
        double rss = rssMb();
        System.err.printf(Locale.ROOT, "CuratorBench: %d locks held after %.1f s; releasing%n", held, acquireNanos / 1e9);
        long r0 = System.nanoTime();
        releaseGo.countDown();
        if (!released.await(HOLDERS_LIMIT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException(held + " locks not released in " + HOLDERS_LIMIT_MS / 1000 + " s");
        }
        long releaseNanos = System.nanoTime() - r0;
        long[] all = new long[held];
        int i = 0;
        for (int k = 0; k < n; k++) {
            if (locks[k] != null) {
                all[i++] = waits[k];
            }
        }
        String extra = String.format(Locale.ROOT,
                ",\"holders\":%d,\"acquire_ms\":%.3f,\"release_ms\":%.3f,\"rss_mb\":%.3f,\"rss_mb_before\":%.3f"
                        + ",\"heap_mb\":%.3f,\"heap_mb_before\":%.3f,\"rss_kb_per_lock\":%.4f",
                n, acquireNanos / 1e6, releaseNanos / 1e6, rss, before, heap, heapBefore, (rss - before) * 1024 / n);
        return json(all, errors.get(), acquireNanos / 1e9, extra);
    }

    /** Counts a holders failure; the first ten are printed. */
    static void holderError(String message, AtomicLong errors) {
        if (errors.incrementAndGet() <= 10) {
            System.err.println("CuratorBench: " + message);
        }
    }

    // ----------------------------------------------------------------------------------------
    // Cleanup of the many nodes of entity and holders, pipelined (the run path goes in cleanup())

    void cleanupMany() throws Exception {
        List<String> leaves = new ArrayList<>();
        List<String> parents = new ArrayList<>();
        if (args.recipe.equals("entity")) {
            for (int k = 0; k < args.paths; k++) {
                leaves.add(stockPath(k));
                leaves.add(runPath + "/lock/" + k);
            }
            parents.add(runPath + "/stock");
            parents.add(runPath + "/lock");
        } else if (args.recipe.equals("holders")) {
            for (int k = 0; k < args.holders; k++) {
                leaves.add(runPath + "/g-" + (k / 1000) + "/h-" + k);
            }
            for (int g = 0; g <= (args.holders - 1) / 1000; g++) {
                parents.add(runPath + "/g-" + g);
            }
        } else {
            return;
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLEANUP_LIMIT_MS);
        List<String> full = deletePipelined(leaves, deadline);
        if (!full.isEmpty()) { // lock nodes left (a failed run): theirs first
            List<String> children = new ArrayList<>();
            for (String p : full) {
                try {
                    for (String child : clients[0].getChildren().forPath(p)) {
                        children.add(p + "/" + child);
                    }
                } catch (KeeperException.NoNodeException e) {
                    // gone meanwhile
                }
            }
            deletePipelined(children, deadline);
            deletePipelined(full, deadline);
        }
        deletePipelined(parents, deadline);
    }

    /**
     * Deletes the paths, at most 1,000 unanswered, until the deadline; a missing node is no
     * failure (the server reaps empty containers by itself). Returns the paths that had children.
     */
    List<String> deletePipelined(List<String> paths, long deadline) throws Exception {
        org.apache.zookeeper.ZooKeeper zk = clients[0].getZookeeperClient().getZooKeeper();
        Semaphore inFlight = new Semaphore(1000);
        List<String> notEmpty = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicInteger bad = new AtomicInteger();
        boolean late = false;
        for (String p : paths) {
            if (!inFlight.tryAcquire(Math.max(deadline - System.nanoTime(), 0), TimeUnit.NANOSECONDS)) {
                late = true;
                break;
            }
            zk.delete(p, -1, (rc, path, ctx) -> {
                if (rc == KeeperException.Code.NOTEMPTY.intValue()) {
                    notEmpty.add(path);
                } else if (rc != 0 && rc != KeeperException.Code.NONODE.intValue()) {
                    bad.incrementAndGet();
                }
                inFlight.release();
            }, null);
        }
        if (late || !inFlight.tryAcquire(1000, Math.max(deadline - System.nanoTime(), 0), TimeUnit.NANOSECONDS)) {
            System.err.println("CuratorBench: cleanup of " + runPath + " ran out of time");
        }
        if (bad.get() > 0) {
            System.err.println("CuratorBench: cleanup: " + bad.get() + " deletes failed under " + runPath);
        }
        synchronized (notEmpty) {
            return new ArrayList<>(notEmpty);
        }
    }

    // ----------------------------------------------------------------------------------------
    // Double barrier: rounds decided together, a fresh path per round

    /** The go/no-go of each round, decided by the first member to reach it. */
    final class Rounds {
        int lastRound = -1;
        boolean lastGo = true;
        boolean aborted;
        final Map<Integer, Long> starts = new HashMap<>();

        synchronized boolean go(int round) {
            if (round != lastRound) {
                long now = System.nanoTime();
                lastRound = round;
                lastGo = lastGo && !aborted && now - windowEnd < 0;
                if (lastGo) {
                    starts.put(round, now);
                }
            }
            return lastGo;
        }

        synchronized void abort() {
            aborted = true;
        }
    }

    String doubleBarrier() throws Exception {
        int n = clients.length;
        Rounds rounds = new Rounds();
        // ends[i] = (round -> leave end nanos) for member i; failed rounds are marked -1
        List<Map<Integer, Long>> ends = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ends.add(new HashMap<>());
        }
        Thread[] threads = new Thread[n];
        CountDownLatch go = new CountDownLatch(1);
        for (int i = 0; i < n; i++) {
            final int index = i;
            final CuratorFramework client = clients[i];
            final Map<Integer, Long> mine = ends.get(i);
            threads[i] = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int round = 0; rounds.go(round); round++) {
                    DistributedDoubleBarrier barrier =
                            new DistributedDoubleBarrier(client, runPath + "/r" + round, n);
                    boolean ok;
                    try {
                        ok = barrier.enter(OP_TIMEOUT_MS, TimeUnit.MILLISECONDS)
                                && barrier.leave(OP_TIMEOUT_MS, TimeUnit.MILLISECONDS);
                    } catch (Exception e) {
                        System.err.println("CuratorBench: client " + index + " round " + round + ": " + e);
                        ok = false;
                    }
                    synchronized (mine) {
                        mine.put(round, ok ? System.nanoTime() : -1L);
                    }
                    if (!ok) {
                        rounds.abort();
                        return;
                    }
                }
            }, "client-" + i);
            threads[i].setDaemon(true);
            threads[i].start();
        }
        startClock();
        go.countDown();
        joinAll(threads);

        List<Long> latencies = new ArrayList<>();
        long errors = 0; // a stuck member leaves its round unfinished: counted there, once
        Map<Integer, Long> starts;
        synchronized (rounds) {
            starts = new HashMap<>(rounds.starts);
        }
        for (Map.Entry<Integer, Long> e : starts.entrySet()) {
            int round = e.getKey();
            long start = e.getValue();
            long end = Long.MIN_VALUE;
            boolean failed = false;
            for (Map<Integer, Long> mine : ends) {
                Long t;
                synchronized (mine) {
                    t = mine.get(round);
                }
                if (t == null || t == -1L) {
                    failed = true;
                } else if (t - end > 0 || end == Long.MIN_VALUE) {
                    end = t;
                }
            }
            boolean inWindow = start - warmupEnd >= 0 && start - windowEnd < 0;
            if (failed) {
                errors++; // in the warm-up too
            } else if (inWindow && end - windowEnd <= 0) {
                latencies.add(end - start);
            }
        }
        long[] all = latencies.stream().mapToLong(Long::longValue).toArray();
        return json(all, errors, args.seconds, null);
    }

    // ----------------------------------------------------------------------------------------
    // Drain: W waiters queued on one lock behind a holder, then timed until all held it once

    String drain() throws Exception {
        int w = args.waiters;
        String path = runPath + "/lock";
        InterProcessMutex holder = new InterProcessMutex(clients[0], path);
        if (!holder.acquire(OP_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("the holder could not take the empty lock");
        }
        long[] held = new long[w];
        long[] released = new long[w];
        AtomicLong failures = new AtomicLong();
        CountDownLatch done = new CountDownLatch(w);
        Thread[] threads = new Thread[w];
        for (int i = 0; i < w; i++) {
            final int index = i;
            final InterProcessMutex mutex = new InterProcessMutex(clients[i % clients.length], path);
            threads[i] = new Thread(() -> {
                try {
                    if (mutex.acquire(OP_TIMEOUT_MS * 2, TimeUnit.MILLISECONDS)) {
                        held[index] = System.nanoTime();
                        enter(1);
                        leave();
                        mutex.release();
                        released[index] = System.nanoTime();
                    } else {
                        failures.incrementAndGet();
                    }
                } catch (Exception e) {
                    System.err.println("CuratorBench: waiter " + index + ": " + e);
                    failures.incrementAndGet();
                } finally {
                    done.countDown();
                }
            }, "waiter-" + i);
            threads[i].setDaemon(true);
        }
        for (Thread t : threads) {
            t.start();
        }
        // Untimed: wait until every waiter has its node in the queue.
        long queueDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
        while (true) {
            int queued = clients[0].getChildren().forPath(path).size();
            if (queued >= w + 1) {
                break;
            }
            if (System.nanoTime() - queueDeadline > 0) {
                throw new IllegalStateException("only " + (queued - 1) + " of " + w + " waiters queued");
            }
            sleepQuietly(20);
        }
        System.err.println("CuratorBench: " + w + " waiters queued; releasing");
        long t0 = System.nanoTime();
        holder.release();
        if (!done.await(OP_TIMEOUT_MS * 2 + 30_000, TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("the waiters did not drain in time");
        }
        long last = t0;
        List<Long> waits = new ArrayList<>();
        for (int i = 0; i < w; i++) {
            if (released[i] != 0) {
                if (released[i] - last > 0) {
                    last = released[i];
                }
                waits.add(held[i] - t0);
            }
        }
        long[] all = waits.stream().mapToLong(Long::longValue).toArray();
        double totalMs = (last - t0) / 1e6;
        String extra = String.format(Locale.ROOT, ",\"waiters\":%d,\"total_ms\":%.3f,\"per_handoff_ms\":%.4f",
                w, totalMs, totalMs / w);
        return json(all, failures.get(), totalMs / 1e3, extra);
    }

    // ----------------------------------------------------------------------------------------
    // CuratorCache: cache-load and cache-delay (the same workloads as zkr/src/bench/cache.rs)

    static final byte[] TREE_DATA = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.UTF_8);
    static final byte[] TREE_COMPLETE = "complete".getBytes(StandardCharsets.UTF_8);

    /** The root, 100 directories d0..d99, the rest as leaves n<j> round-robin over them. */
    static List<String> treePaths(String root, int nodes) {
        int dirs = Math.min(Math.max(nodes - 1, 0), 100);
        List<String> paths = new ArrayList<>(nodes);
        paths.add(root);
        for (int d = 0; d < dirs; d++) {
            paths.add(root + "/d" + d);
        }
        for (int j = 0; j < nodes - 1 - dirs; j++) {
            paths.add(root + "/d" + (j % dirs) + "/n" + j);
        }
        return paths;
    }

    /** Creates the paths after the first (which exists), at most 1,000 unanswered. */
    void createPipelined(List<String> paths, byte[] data) throws Exception {
        createPipelined(paths, data, CreateMode.PERSISTENT);
    }

    /** The same, the nodes made with `mode`. */
    void createPipelined(List<String> paths, byte[] data, CreateMode mode) throws Exception {
        org.apache.zookeeper.ZooKeeper zk = clients[0].getZookeeperClient().getZooKeeper();
        java.util.concurrent.Semaphore inFlight = new java.util.concurrent.Semaphore(1000);
        AtomicInteger bad = new AtomicInteger();
        for (String p : paths.subList(1, paths.size())) {
            inFlight.acquire();
            zk.create(p, data, org.apache.zookeeper.ZooDefs.Ids.OPEN_ACL_UNSAFE, mode,
                    (rc, path, ctx, name) -> {
                        if (rc != 0 && rc != org.apache.zookeeper.KeeperException.Code.NODEEXISTS.intValue()) {
                            bad.incrementAndGet();
                        }
                        inFlight.release();
                    }, null);
        }
        inFlight.acquire(1000);
        inFlight.release(1000);
        if (bad.get() > 0) {
            throw new IllegalStateException(bad.get() + " creates failed");
        }
    }

    static double rssMb() {
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Paths.get("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
                }
            }
        } catch (Exception e) {
            // not Linux
        }
        return 0;
    }

    static double heapUsedMb() {
        Runtime rt = Runtime.getRuntime();
        System.gc();
        return (rt.totalMemory() - rt.freeMemory()) / 1048576.0;
    }

    String cacheLoad() throws Exception {
        String root = args.base + "/cache-tree-" + args.nodes;
        CuratorFramework c = clients[0];
        try {
            c.create().creatingParentContainersIfNeeded().forPath(root, new byte[0]);
        } catch (org.apache.zookeeper.KeeperException.NodeExistsException e) {
            // built already, or partly
        }
        if (!Arrays.equals(c.getData().forPath(root), TREE_COMPLETE)) {
            long t = System.nanoTime();
            createPipelined(treePaths(root, args.nodes), TREE_DATA);
            c.setData().forPath(root, TREE_COMPLETE);
            System.err.printf(Locale.ROOT, "CuratorBench: built the tree of %d nodes in %.1f s%n", args.nodes,
                    (System.nanoTime() - t) / 1e9);
        }
        double heapBefore = heapUsedMb();
        double before = rssMb();
        CountDownLatch initialized = new CountDownLatch(1);
        org.apache.curator.framework.recipes.cache.CuratorCache cache =
                org.apache.curator.framework.recipes.cache.CuratorCache.build(c, root);
        cache.listenable().addListener(org.apache.curator.framework.recipes.cache.CuratorCacheListener.builder()
                .forInitialized(initialized::countDown).build());
        long t0 = System.nanoTime();
        cache.start();
        if (!initialized.await(600, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the cache never initialized");
        }
        long initializedAt = System.nanoTime() - t0;
        long atInitialized = cache.size();
        // CURATOR-690: past 65,535 outstanding reads CuratorCache reports initialized early (its
        // Phaser's limit); the time counted is to the complete content, the early signal is kept
        // apart (initialized_ms, at_initialized).
        // It may never complete (seen: stuck at 65,635 of 100,000 for minutes): wait 30 s at most;
        // then the run reports complete 0 and the nodes it holds, and no load time.
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (cache.size() < args.nodes && System.nanoTime() - deadline < 0) {
            Thread.sleep(1);
        }
        long took = System.nanoTime() - t0;
        double rss = rssMb();
        double heap = heapUsedMb();
        long loaded = cache.size();
        cache.close();
        if (loaded != args.nodes) {
            System.err.println("CuratorBench: the cache holds " + loaded + " nodes, not " + args.nodes
                    + ", 30 s after Initialized (at Initialized: " + atInitialized + ")");
            String extra = String.format(Locale.ROOT,
                    ",\"nodes\":%d,\"complete\":0,\"loaded\":%d,\"at_initialized\":%d,\"initialized_ms\":%.3f"
                            + ",\"rss_mb\":%.3f,\"rss_mb_before\":%.3f,\"rss_delta_mb\":%.3f,\"heap_delta_mb\":%.3f",
                    args.nodes, loaded, atInitialized, initializedAt / 1e6, rss, before, rss - before, heap - heapBefore);
            return json(new long[0], 1, args.seconds, extra);
        }
        String extra = String.format(Locale.ROOT,
                ",\"nodes\":%d,\"load_ms\":%.3f,\"rss_mb\":%.3f,\"rss_mb_before\":%.3f,\"rss_delta_mb\":%.3f,\"heap_delta_mb\":%.3f"
                        + ",\"initialized_ms\":%.3f,\"at_initialized\":%d",
                args.nodes, took / 1e6, rss, before, rss - before, heap - heapBefore, initializedAt / 1e6, atInitialized);
        return json(new long[] {took}, 0, args.seconds, extra);
    }

    String cacheDelay() throws Exception {
        String root = runPath + "/tree";
        CuratorFramework c = clients[0];
        c.create().forPath(root, new byte[0]);
        List<String> paths = treePaths(root, Math.max(args.nodes, 2));
        createPipelined(paths, "0".getBytes(StandardCharsets.UTF_8));
        int depth = root.split("/").length;
        List<String> leaves = new ArrayList<>();
        for (String p : paths) {
            if (p.split("/").length > depth) {
                leaves.add(p);
            }
        }
        final long origin = System.nanoTime();
        final long startUs = (long) (args.warmup * 1e6);
        final long endUs = startUs + (long) (args.seconds * 1e6);
        List<Long> delays = java.util.Collections.synchronizedList(new ArrayList<>());
        CountDownLatch initialized = new CountDownLatch(1);
        org.apache.curator.framework.recipes.cache.CuratorCache cache =
                org.apache.curator.framework.recipes.cache.CuratorCache.build(c, root);
        cache.listenable().addListener(org.apache.curator.framework.recipes.cache.CuratorCacheListener.builder()
                .forInitialized(initialized::countDown)
                .forChanges((oldNode, node) -> {
                    long nowUs = (System.nanoTime() - origin) / 1000;
                    try {
                        long us = Long.parseLong(new String(node.getData(), StandardCharsets.UTF_8));
                        if (us >= startUs && us < endUs) {
                            delays.add((nowUs - us) * 1000);
                        }
                    } catch (NumberFormatException e) {
                        // the initial "0"
                    }
                }).build());
        cache.start();
        if (!initialized.await(120, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the cache never initialized");
        }
        // the writer: its own session, writes pipelined, rate/100 every 10 ms
        CuratorFramework writer = CuratorFrameworkFactory.builder().connectString(args.connect)
                .sessionTimeoutMs(30_000).connectionTimeoutMs(15_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3)).build();
        writer.start();
        writer.blockUntilConnected(30, TimeUnit.SECONDS);
        org.apache.zookeeper.ZooKeeper zk = writer.getZookeeperClient().getZooKeeper();
        AtomicLong errors = new AtomicLong();
        long sent = 0;
        int perTick = Math.max(args.rate / 100, 1);
        int next = 0;
        long tick = System.nanoTime();
        while (true) {
            tick += 10_000_000L;
            long wait = tick - System.nanoTime();
            if (wait > 0) {
                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            }
            if ((System.nanoTime() - origin) / 1000 > endUs) {
                break;
            }
            for (int i = 0; i < perTick; i++) {
                long us = (System.nanoTime() - origin) / 1000;
                zk.setData(leaves.get(next % leaves.size()), Long.toString(us).getBytes(StandardCharsets.UTF_8), -1,
                        (rc, path, ctx, stat) -> {
                            if (rc != 0) {
                                errors.incrementAndGet();
                            }
                        }, null);
                next++;
                if (us >= startUs && us < endUs) {
                    sent++;
                }
            }
        }
        Thread.sleep(2000);
        cache.close();
        writer.close();
        long[] all;
        synchronized (delays) {
            all = delays.stream().mapToLong(Long::longValue).toArray();
        }
        String extra = String.format(Locale.ROOT, ",\"nodes\":%d,\"rate\":%d,\"writes\":%d,\"missed\":%d,\"resyncs\":0",
                args.nodes, args.rate, sent, Math.max(sent - all.length, 0));
        return json(all, errors.get(), args.seconds, extra);
    }

    // ----------------------------------------------------------------------------------------
    // Output

    /** The result line; `seconds` is the measured window (the drain's duration for drain). */
    String json(long[] latencies, long errors, double seconds, String extra) {
        Arrays.sort(latencies);
        long ops = latencies.length;
        StringBuilder sb = new StringBuilder();
        sb.append("{\"peer\":\"").append(PEER).append("\"");
        sb.append(",\"recipe\":\"").append(args.recipe).append("\"");
        sb.append(",\"clients\":").append(args.clients);
        sb.append(",\"seconds\":").append(fmt(seconds, 3));
        sb.append(",\"ops\":").append(ops);
        sb.append(",\"ops_per_s\":").append(fmt(seconds > 0 ? ops / seconds : 0, 1));
        sb.append(",\"p50_ms\":").append(ops == 0 ? "null" : fmt(percentile(latencies, 0.50) / 1e6, 3));
        sb.append(",\"p99_ms\":").append(ops == 0 ? "null" : fmt(percentile(latencies, 0.99) / 1e6, 3));
        sb.append(",\"violations\":").append(violations.get());
        sb.append(",\"errors\":").append(errors);
        if (args.recipe.equals("semaphore")) {
            sb.append(",\"leases\":").append(args.leases);
        }
        if (args.tasks > 1 || ONE_SESSION.contains(args.recipe)) {
            sb.append(",\"tasks\":").append(args.tasks);
        }
        if (extra != null) {
            sb.append(extra);
        }
        sb.append('}');
        return sb.toString();
    }

    /** Nearest-rank percentile of sorted values. */
    static long percentile(long[] sorted, double p) {
        int rank = (int) Math.ceil(p * sorted.length);
        return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1];
    }

    static String fmt(double v, int decimals) {
        return String.format(Locale.ROOT, "%." + decimals + "f", v);
    }

    static void sleepQuietly(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
