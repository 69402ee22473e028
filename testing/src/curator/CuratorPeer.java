// A long-running Apache Curator participant that Rust tests drive over stdin/stdout.
//
// Part of zk-recipes' testing kit (see testing/src/curator/, which compiles and starts this
// file). Protocol, one request per line on stdin, one answer per line on stdout:
//
//   <rid> <command> <arg>...        ->   <rid> OK <payload>
//                                   or   <rid> ERR <ExceptionClass> <message>
//
// Arguments are separated by spaces and never contain whitespace. Times are milliseconds; a
// negative timeout waits forever. Commands run on executor threads, so a blocking acquire does
// not block the command loop: the Rust side may have many requests outstanding and matches the
// answers by <rid>.
//
// Thread affinity: Curator's InterProcessMutex and the read-write lock belong to the thread that
// acquired them, so every (client, holder) pair gets one dedicated thread for mutex.* and rw.*
// commands (a holder id is the analogue of a Java thread: acquiring twice through one holder
// is re-entrant). All other commands run on a shared pool.
//
// The process exits when stdin reaches end of file (so a killed test never leaves a JVM
// behind) or on "quit". Nothing but answers is written to stdout: System.out is redirected to
// stderr, and slf4j-nop on the class path silences Curator's and ZooKeeper's logging.

import java.io.BufferedReader;
import java.io.Closeable;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicInteger;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceInstanceBuilder;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.Stat;

import com.fasterxml.jackson.databind.ObjectMapper;

public final class CuratorPeer {
    /** The real stdout; only answers go there. */
    private static PrintStream out;

    private static final Map<String, CuratorFramework> CLIENTS = new ConcurrentHashMap<>();
    /** Recipe objects by holder key (cid + '\0' + hid). */
    private static final Map<String, Object> HOLDERS = new ConcurrentHashMap<>();
    /** Dedicated single threads for thread-bound locks, by holder key. */
    private static final Map<String, ExecutorService> HOLDER_THREADS = new ConcurrentHashMap<>();

    private static final AtomicInteger THREAD_SEQ = new AtomicInteger();
    private static final ExecutorService POOL = Executors.newCachedThreadPool(daemon("peer-pool"));

    private CuratorPeer() {}

    // ----------------------------------------------------------------------------------------
    // Holder state

    private static final class MutexHolder {
        final String path;
        final InterProcessMutex mutex;
        int holds;

        MutexHolder(CuratorFramework client, String path) {
            this.path = path;
            this.mutex = new InterProcessMutex(client, path);
        }
    }

    private static final class RwHolder {
        final String path;
        final InterProcessReadWriteLock lock;
        /** Acquired locks, most recent first; an entry per successful acquire. */
        final Deque<InterProcessMutex> held = new ArrayDeque<>();

        RwHolder(CuratorFramework client, String path) {
            this.path = path;
            this.lock = new InterProcessReadWriteLock(client, path);
        }
    }

    private static final class SemHolder {
        final String path;
        final int maxLeases;
        final InterProcessSemaphoreV2 semaphore;
        final List<Lease> leases = new ArrayList<>();

        SemHolder(CuratorFramework client, String path, int maxLeases) {
            this.path = path;
            this.maxLeases = maxLeases;
            this.semaphore = new InterProcessSemaphoreV2(client, path, maxLeases);
        }
    }

    private static final class SemMutexHolder {
        final String path;
        final InterProcessSemaphoreMutex mutex;

        SemMutexHolder(CuratorFramework client, String path) {
            this.path = path;
            this.mutex = new InterProcessSemaphoreMutex(client, path);
        }
    }

    private static final class DoubleBarrierHolder {
        final String path;
        final DistributedDoubleBarrier barrier;

        DoubleBarrierHolder(CuratorFramework client, String path, int memberQty) {
            this.path = path;
            this.barrier = new DistributedDoubleBarrier(client, path, memberQty);
        }
    }

    private static final class CacheHolder {
        final CuratorCache cache;
        /** Counted down by the listener's initialized() callback. */
        final CountDownLatch initialized = new CountDownLatch(1);
        /** "<type> <path> <czxid>" per listener event not yet taken by cache.events. */
        final List<String> events = new ArrayList<>();

        CacheHolder(CuratorFramework client, String path) {
            this.cache = CuratorCache.build(client, path);
            this.cache.listenable().addListener(new CuratorCacheListener() {
                @Override
                public void event(Type type, ChildData oldData, ChildData data) {
                    ChildData node = data != null ? data : oldData;
                    synchronized (events) {
                        events.add(type.name().toLowerCase().replace("node_", "") + " " + node.getPath() + " "
                                + node.getStat().getCzxid());
                    }
                }

                @Override
                public void initialized() {
                    initialized.countDown();
                }
            });
        }
    }

    // ----------------------------------------------------------------------------------------
    // Main loop

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            line = line.strip();
            if (line.isEmpty()) {
                continue;
            }
            String[] words = line.split("\\s+");
            final String rid = words[0];
            if (words.length < 2) {
                err(rid, new IllegalArgumentException("missing command after request id"));
                continue;
            }
            final String cmd = words[1];
            final String[] a = new String[words.length - 2];
            System.arraycopy(words, 2, a, 0, a.length);
            if (cmd.equals("quit")) {
                respond(rid, "OK bye");
                shutdown(2000);
                return;
            }
            executorFor(cmd, a).execute(() -> run(rid, cmd, a));
        }
        shutdown(1000);
    }

    private static ExecutorService executorFor(String cmd, String[] a) {
        boolean threadBound = cmd.startsWith("mutex.") || cmd.startsWith("rw.");
        if (!threadBound || a.length < 2) {
            return POOL;
        }
        return HOLDER_THREADS.computeIfAbsent(key(a[0], a[1]),
                k -> Executors.newSingleThreadExecutor(daemon("peer-holder")));
    }

    private static void run(String rid, String cmd, String[] a) {
        try {
            respond(rid, "OK " + dispatch(cmd, a));
        } catch (Throwable t) {
            err(rid, t);
        }
    }

    private static String dispatch(String cmd, String[] a) throws Exception {
        switch (cmd) {
            case "ping":
                return "pong";
            case "connect":
                need(a, 2, "connect <cid> <connectString> [sessionTimeoutMs [tlsCaPem tlsKeyStorePem]]");
                return connect(a[0], a[1], a.length > 2 ? Integer.parseInt(a[2]) : 10000,
                        a.length > 4 ? tlsConfig(a[3], a[4]) : null);
            case "close":
                need(a, 1, "close <cid>");
                return closeClient(a[0]);
            case "session":
                need(a, 1, "session <cid>");
                return Long.toString(client(a[0]).getZookeeperClient().getZooKeeper().getSessionId());

            case "mutex.acquire":
                need(a, 4, "mutex.acquire <cid> <hid> <path> <timeoutMs>");
                return mutexAcquire(a[0], a[1], a[2], Long.parseLong(a[3]));
            case "mutex.release":
                need(a, 2, "mutex.release <cid> <hid>");
                return mutexRelease(a[0], a[1]);

            case "rw.read.acquire":
                need(a, 4, "rw.read.acquire <cid> <hid> <path> <timeoutMs>");
                return rwAcquire(a[0], a[1], a[2], Long.parseLong(a[3]), false);
            case "rw.write.acquire":
                need(a, 4, "rw.write.acquire <cid> <hid> <path> <timeoutMs>");
                return rwAcquire(a[0], a[1], a[2], Long.parseLong(a[3]), true);
            case "rw.release":
                need(a, 2, "rw.release <cid> <hid> [read|write]");
                return rwRelease(a[0], a[1], a.length > 2 ? a[2] : null);

            case "sem.acquire":
                need(a, 6, "sem.acquire <cid> <hid> <path> <maxLeases> <count> <timeoutMs>");
                return semAcquire(a[0], a[1], a[2], Integer.parseInt(a[3]), Integer.parseInt(a[4]),
                        Long.parseLong(a[5]));
            case "sem.release":
                need(a, 2, "sem.release <cid> <hid>");
                return semRelease(a[0], a[1]);

            case "semmutex.acquire":
                need(a, 4, "semmutex.acquire <cid> <hid> <path> <timeoutMs>");
                return semMutexAcquire(a[0], a[1], a[2], Long.parseLong(a[3]));
            case "semmutex.release":
                need(a, 2, "semmutex.release <cid> <hid>");
                return semMutexRelease(a[0], a[1]);

            case "sharedcount.get":
                need(a, 2, "sharedcount.get <cid> <path>");
                return sharedCount(a[0], a[1], 0, false);
            case "sharedcount.add":
                need(a, 3, "sharedcount.add <cid> <path> <delta>");
                return sharedCount(a[0], a[1], Integer.parseInt(a[2]), true);

            case "atomiclong.get":
                need(a, 2, "atomiclong.get <cid> <path>");
                return format(atomicLong(a[0], a[1]).get());
            case "atomiclong.add":
                need(a, 3, "atomiclong.add <cid> <path> <delta>");
                return format(atomicLong(a[0], a[1]).add(Long.parseLong(a[2])));
            case "atomicint.get":
                need(a, 2, "atomicint.get <cid> <path>");
                return format(atomicInt(a[0], a[1]).get());
            case "atomicint.add":
                need(a, 3, "atomicint.add <cid> <path> <delta>");
                return format(atomicInt(a[0], a[1]).add(Integer.parseInt(a[2])));

            case "latch.start":
                need(a, 4, "latch.start <cid> <hid> <path> <participantId>");
                return latchStart(a[0], a[1], a[2], a[3]);
            case "latch.has":
                need(a, 2, "latch.has <cid> <hid>");
                return Boolean.toString(holder(a[0], a[1], LeaderLatch.class).hasLeadership());
            case "latch.await": {
                need(a, 3, "latch.await <cid> <hid> <timeoutMs>");
                LeaderLatch latch = holder(a[0], a[1], LeaderLatch.class);
                long ms = Long.parseLong(a[2]);
                if (ms < 0) {
                    latch.await();
                    return "true";
                }
                return Boolean.toString(latch.await(ms, TimeUnit.MILLISECONDS));
            }
            case "latch.leader":
                need(a, 2, "latch.leader <cid> <hid>");
                return holder(a[0], a[1], LeaderLatch.class).getLeader().getId();
            case "latch.ourpath":
                need(a, 2, "latch.ourpath <cid> <hid>");
                return String.valueOf(holder(a[0], a[1], LeaderLatch.class).getOurPath());
            case "latch.close": {
                need(a, 2, "latch.close <cid> <hid>");
                LeaderLatch latch = holder(a[0], a[1], LeaderLatch.class);
                HOLDERS.remove(key(a[0], a[1]), latch);
                latch.close();
                return "closed";
            }

            case "dbarrier.enter":
                need(a, 5, "dbarrier.enter <cid> <hid> <path> <memberQty> <timeoutMs>");
                return doubleBarrierEnter(a[0], a[1], a[2], Integer.parseInt(a[3]), Long.parseLong(a[4]));
            case "dbarrier.leave":
                need(a, 3, "dbarrier.leave <cid> <hid> <timeoutMs>");
                return doubleBarrierLeave(a[0], a[1], Long.parseLong(a[2]));

            case "barrier.set":
                need(a, 2, "barrier.set <cid> <path>");
                new DistributedBarrier(client(a[0]), a[1]).setBarrier();
                return "set";
            case "barrier.remove":
                need(a, 2, "barrier.remove <cid> <path>");
                new DistributedBarrier(client(a[0]), a[1]).removeBarrier();
                return "removed";
            case "barrier.wait": {
                need(a, 3, "barrier.wait <cid> <path> <timeoutMs>");
                DistributedBarrier barrier = new DistributedBarrier(client(a[0]), a[1]);
                long ms = Long.parseLong(a[2]);
                if (ms < 0) {
                    barrier.waitOnBarrier();
                    return "true";
                }
                return Boolean.toString(barrier.waitOnBarrier(ms, TimeUnit.MILLISECONDS));
            }

            case "node.create":
                need(a, 3, "node.create <cid> <path> <hexData|->");
                return nodeCreate(a[0], a[1], unhex(a[2]));
            case "node.set":
                need(a, 3, "node.set <cid> <path> <hexData|->");
                return Integer.toString(client(a[0]).setData().forPath(a[1], unhex(a[2])).getVersion());
            case "node.delete":
                need(a, 2, "node.delete <cid> <path> [recursive]");
                return nodeDelete(a[0], a[1], a.length > 2 && a[2].equals("recursive"));

            case "cache.start":
                need(a, 3, "cache.start <cid> <hid> <path>");
                return cacheStart(a[0], a[1], a[2]);
            case "cache.initialized":
                need(a, 2, "cache.initialized <cid> <hid>");
                return Boolean.toString(holder(a[0], a[1], CacheHolder.class).initialized.getCount() == 0);
            case "cache.content":
                need(a, 2, "cache.content <cid> <hid>");
                return cacheContent(holder(a[0], a[1], CacheHolder.class).cache);
            case "cache.events": {
                need(a, 2, "cache.events <cid> <hid>");
                List<String> events = holder(a[0], a[1], CacheHolder.class).events;
                synchronized (events) {
                    String answer = events.size() + (events.isEmpty() ? "" : " " + String.join(" ", events));
                    events.clear();
                    return answer;
                }
            }
            case "cache.close": {
                need(a, 2, "cache.close <cid> <hid>");
                CacheHolder h = holder(a[0], a[1], CacheHolder.class);
                HOLDERS.remove(key(a[0], a[1]), h);
                h.cache.close();
                return "closed";
            }

            case "group.start":
                need(a, 5, "group.start <cid> <hid> <path> <memberId> <hexData|->");
                return groupStart(a[0], a[1], a[2], a[3], unhex(a[4]));
            case "group.members":
                need(a, 2, "group.members <cid> <hid>");
                return groupMembers(holder(a[0], a[1], GroupMember.class));
            case "group.set":
                need(a, 3, "group.set <cid> <hid> <hexData|->");
                holder(a[0], a[1], GroupMember.class).setThisData(unhex(a[2]));
                return "set";
            case "group.close": {
                need(a, 2, "group.close <cid> <hid>");
                GroupMember g = holder(a[0], a[1], GroupMember.class);
                HOLDERS.remove(key(a[0], a[1]), g);
                g.close();
                return "closed";
            }

            case "discovery.start":
                need(a, 3, "discovery.start <cid> <hid> <basePath>");
                return discoveryStart(a[0], a[1], a[2]);
            case "discovery.register":
                need(a, 8, "discovery.register <cid> <hid> <name> <id> <address> <port> <sslPort|-> <hexPayloadJson|->");
                holder(a[0], a[1], ServiceDiscovery.class).registerService(instance(a[2], a[3], a[4], a[5], a[6], a[7]));
                return "registered";
            case "discovery.unregister":
                need(a, 4, "discovery.unregister <cid> <hid> <name> <id>");
                holder(a[0], a[1], ServiceDiscovery.class)
                        .unregisterService(ServiceInstance.builder().name(a[2]).id(a[3]).build());
                return "unregistered";
            case "discovery.instances":
                need(a, 3, "discovery.instances <cid> <hid> <name>");
                return instancesJson(holder(a[0], a[1], ServiceDiscovery.class).queryForInstances(a[2]));
            case "discovery.names":
                need(a, 2, "discovery.names <cid> <hid>");
                return namesOf(holder(a[0], a[1], ServiceDiscovery.class));
            case "discovery.cache.start":
                need(a, 4, "discovery.cache.start <cid> <hid> <cacheHid> <name>");
                return discoveryCacheStart(a[0], a[1], a[2], a[3]);
            case "discovery.cache.instances":
                need(a, 2, "discovery.cache.instances <cid> <cacheHid>");
                return instancesJson(holder(a[0], a[1], ServiceCache.class).getInstances());
            case "discovery.close": {
                need(a, 2, "discovery.close <cid> <hid>");
                Closeable h = holder(a[0], a[1], Closeable.class);
                HOLDERS.remove(key(a[0], a[1]), h);
                h.close();
                return "closed";
            }

            case "queue.put":
                need(a, 5, "queue.put <cid> <path> <simple|distributed|id|priority|delay> <id|priority|epochMs|-> <hexItem>[,<hexItem>...]");
                return queuePut(client(a[0]), a[1], a[2], a[3], a[4].split(","));
            case "queue.simple.poll":
                need(a, 3, "queue.simple.poll <cid> <path> <timeoutMs>");
                return queueSimplePoll(client(a[0]), a[1], Long.parseLong(a[2]));
            case "queue.consume.start":
                need(a, 5, "queue.consume.start <cid> <hid> <path> <distributed|id|priority|delay> <lockPath|->");
                return queueConsumeStart(a[0], a[1], a[2], a[3], a[4]);
            case "queue.consume.items":
                need(a, 2, "queue.consume.items <cid> <hid>");
                return queueConsumed(holder(a[0], a[1], QueueHolder.class));
            case "queue.consume.close": {
                need(a, 2, "queue.consume.close <cid> <hid>");
                QueueHolder h = holder(a[0], a[1], QueueHolder.class);
                HOLDERS.remove(key(a[0], a[1]), h);
                h.queue.close();
                return "closed";
            }
            case "queue.remove":
                need(a, 3, "queue.remove <cid> <path> <id>");
                return queueRemove(client(a[0]), a[1], a[2]);

            default:
                if (cmd.startsWith("selector.")) {
                    return selectorCommand(cmd, a);
                }
                if (cmd.startsWith("multilock.")) {
                    return multiLockCommand(cmd, a);
                }
                if (cmd.startsWith("sharedvalue.") || cmd.startsWith("atomicvalue.")) {
                    return valueCommand(cmd, a);
                }
                if (cmd.startsWith("pnode.") || cmd.startsWith("ttlnode.") || cmd.equals("session.expire")) {
                    return persistentNodeCommand(cmd, a);
                }
                if (cmd.startsWith("revmutex.") || cmd.equals("revoke.attempt")) {
                    return revocationCommand(cmd, a);
                }
                if (cmd.startsWith("shedlock.")) {
                    return ShedLockCommands.dispatch(cmd, a, CuratorPeer::client);
                }
                if (cmd.startsWith("gzip.")) {
                    return CompressionCommands.dispatch(cmd, a, CuratorPeer::client);
                }
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    // ----------------------------------------------------------------------------------------
    // Clients

    /**
     * ZooKeeper client settings for (mutual) TLS: the Netty socket, the CA to trust and the
     * client's key and certificate, both PEM files (ZooKeeper 3.8's X509Util reads them).
     */
    private static ZKClientConfig tlsConfig(String caPem, String keyStorePem) {
        ZKClientConfig config = new ZKClientConfig();
        config.setProperty(ZKClientConfig.SECURE_CLIENT, "true");
        config.setProperty(ZKClientConfig.ZOOKEEPER_CLIENT_CNXN_SOCKET, "org.apache.zookeeper.ClientCnxnSocketNetty");
        config.setProperty("zookeeper.ssl.trustStore.location", caPem);
        config.setProperty("zookeeper.ssl.trustStore.type", "PEM");
        config.setProperty("zookeeper.ssl.keyStore.location", keyStorePem);
        config.setProperty("zookeeper.ssl.keyStore.type", "PEM");
        return config;
    }

    private static String connect(String cid, String connectString, int sessionTimeoutMs, ZKClientConfig tls)
            throws Exception {
        if (CLIENTS.containsKey(cid)) {
            throw new IllegalStateException("client " + cid + " is already connected");
        }
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs(Math.min(sessionTimeoutMs, 15000))
                .retryPolicy(new ExponentialBackoffRetry(100, 3));
        if (tls != null) {
            builder.zkClientConfig(tls);
        }
        CuratorFramework client = builder.build();
        client.start();
        if (!client.blockUntilConnected(Math.max(sessionTimeoutMs, 1000), TimeUnit.MILLISECONDS)) {
            client.close();
            throw new IllegalStateException("could not connect to " + connectString);
        }
        if (CLIENTS.putIfAbsent(cid, client) != null) {
            client.close();
            throw new IllegalStateException("client " + cid + " is already connected");
        }
        return Long.toString(client.getZookeeperClient().getZooKeeper().getSessionId());
    }

    private static String closeClient(String cid) {
        CuratorFramework client = CLIENTS.remove(cid);
        if (client == null) {
            throw new IllegalStateException("no client " + cid);
        }
        String prefix = cid + '\0';
        for (Iterator<Map.Entry<String, Object>> it = HOLDERS.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, Object> e = it.next();
            if (e.getKey().startsWith(prefix)) {
                it.remove();
                if (e.getValue() instanceof LeaderLatch) {
                    try {
                        ((LeaderLatch) e.getValue()).close();
                    } catch (Exception ignored) {
                        // the session close below removes its node anyway
                    }
                } else if (e.getValue() instanceof CacheHolder) {
                    ((CacheHolder) e.getValue()).cache.close();
                } else if (e.getValue() instanceof GroupMember) {
                    ((GroupMember) e.getValue()).close();
                } else if (e.getValue() instanceof Closeable) {
                    try {
                        ((Closeable) e.getValue()).close();
                    } catch (Exception ignored) {
                        // the client's close below ends what it kept anyway
                    }
                }
            }
        }
        for (Iterator<Map.Entry<String, ExecutorService>> it = HOLDER_THREADS.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<String, ExecutorService> e = it.next();
            if (e.getKey().startsWith(prefix)) {
                it.remove();
                e.getValue().shutdownNow();
            }
        }
        client.close();
        return "closed";
    }

    private static CuratorFramework client(String cid) {
        CuratorFramework client = CLIENTS.get(cid);
        if (client == null) {
            throw new IllegalStateException("no client " + cid);
        }
        return client;
    }

    // ----------------------------------------------------------------------------------------
    // Locks

    private static String mutexAcquire(String cid, String hid, String path, long ms) throws Exception {
        CuratorFramework client = client(cid);
        String k = key(cid, hid);
        MutexHolder h = (MutexHolder) HOLDERS.computeIfAbsent(k, x -> new MutexHolder(client, path));
        checkPath(h.path, path, hid);
        boolean ok;
        try {
            ok = acquire(h.mutex, ms);
        } finally {
            if (h.holds == 0) {
                HOLDERS.remove(k, h);
            }
        }
        if (ok) {
            h.holds++;
            HOLDERS.put(k, h);
        }
        return Boolean.toString(ok);
    }

    private static String mutexRelease(String cid, String hid) throws Exception {
        String k = key(cid, hid);
        MutexHolder h = holder(cid, hid, MutexHolder.class);
        h.mutex.release();
        h.holds--;
        if (h.holds <= 0) {
            HOLDERS.remove(k, h);
        }
        return Integer.toString(Math.max(h.holds, 0));
    }

    private static String rwAcquire(String cid, String hid, String path, long ms, boolean write) throws Exception {
        CuratorFramework client = client(cid);
        String k = key(cid, hid);
        RwHolder h = (RwHolder) HOLDERS.computeIfAbsent(k, x -> new RwHolder(client, path));
        checkPath(h.path, path, hid);
        InterProcessMutex lock = write ? h.lock.writeLock() : h.lock.readLock();
        boolean ok;
        try {
            ok = acquire(lock, ms);
        } finally {
            if (h.held.isEmpty()) {
                HOLDERS.remove(k, h);
            }
        }
        if (ok) {
            h.held.push(lock);
            HOLDERS.put(k, h);
        }
        return Boolean.toString(ok);
    }

    private static String rwRelease(String cid, String hid, String kind) throws Exception {
        String k = key(cid, hid);
        RwHolder h = holder(cid, hid, RwHolder.class);
        InterProcessMutex lock;
        if (kind == null) {
            lock = h.held.peek();
        } else if (kind.equals("read") || kind.equals("write")) {
            InterProcessMutex wanted = kind.equals("read") ? h.lock.readLock() : h.lock.writeLock();
            lock = h.held.contains(wanted) ? wanted : null;
        } else {
            throw new IllegalArgumentException("kind must be read or write, not " + kind);
        }
        if (lock == null) {
            throw new IllegalMonitorStateException("holder " + hid + " holds no such lock");
        }
        lock.release();
        h.held.removeFirstOccurrence(lock);
        if (h.held.isEmpty()) {
            HOLDERS.remove(k, h);
        }
        return Integer.toString(h.held.size());
    }

    private static boolean acquire(InterProcessMutex lock, long ms) throws Exception {
        if (ms < 0) {
            lock.acquire();
            return true;
        }
        return lock.acquire(ms, TimeUnit.MILLISECONDS);
    }

    private static String semAcquire(String cid, String hid, String path, int maxLeases, int count, long ms)
            throws Exception {
        CuratorFramework client = client(cid);
        SemHolder h = (SemHolder) HOLDERS.computeIfAbsent(key(cid, hid), x -> new SemHolder(client, path, maxLeases));
        checkPath(h.path, path, hid);
        if (h.maxLeases != maxLeases) {
            throw new IllegalArgumentException("holder " + hid + " uses maxLeases " + h.maxLeases);
        }
        Collection<Lease> got = ms < 0 ? h.semaphore.acquire(count) : h.semaphore.acquire(count, ms, TimeUnit.MILLISECONDS);
        if (got == null) {
            return "false";
        }
        synchronized (h) {
            h.leases.addAll(got);
        }
        return Integer.toString(got.size());
    }

    private static String semRelease(String cid, String hid) {
        SemHolder h = holder(cid, hid, SemHolder.class);
        List<Lease> leases;
        synchronized (h) {
            leases = new ArrayList<>(h.leases);
            h.leases.clear();
        }
        h.semaphore.returnAll(leases);
        return Integer.toString(leases.size());
    }

    private static String semMutexAcquire(String cid, String hid, String path, long ms) throws Exception {
        CuratorFramework client = client(cid);
        SemMutexHolder h = (SemMutexHolder) HOLDERS.computeIfAbsent(key(cid, hid), x -> new SemMutexHolder(client, path));
        checkPath(h.path, path, hid);
        if (ms < 0) {
            h.mutex.acquire();
            return "true";
        }
        return Boolean.toString(h.mutex.acquire(ms, TimeUnit.MILLISECONDS));
    }

    private static String semMutexRelease(String cid, String hid) throws Exception {
        holder(cid, hid, SemMutexHolder.class).mutex.release();
        return "released";
    }

    // ----------------------------------------------------------------------------------------
    // Counters

    private static String sharedCount(String cid, String path, int delta, boolean add) throws Exception {
        SharedCount count = new SharedCount(client(cid), path, 0);
        count.start();
        try {
            if (!add) {
                return Integer.toString(count.getCount());
            }
            while (true) {
                VersionedValue<Integer> current = count.getVersionedValue();
                int next = current.getValue() + delta;
                if (count.trySetCount(current, next)) {
                    return Integer.toString(next);
                }
            }
        } finally {
            count.close();
        }
    }

    private static DistributedAtomicLong atomicLong(String cid, String path) {
        return new DistributedAtomicLong(client(cid), path, new RetryNTimes(1000, 1));
    }

    private static DistributedAtomicInteger atomicInt(String cid, String path) {
        return new DistributedAtomicInteger(client(cid), path, new RetryNTimes(1000, 1));
    }

    private static String format(AtomicValue<? extends Number> v) {
        return v.succeeded() + " " + v.preValue() + " " + v.postValue();
    }

    // ----------------------------------------------------------------------------------------
    // Leader latch, barriers

    private static String latchStart(String cid, String hid, String path, String participantId) throws Exception {
        LeaderLatch latch = new LeaderLatch(client(cid), path, participantId);
        if (HOLDERS.putIfAbsent(key(cid, hid), latch) != null) {
            throw new IllegalStateException("holder " + hid + " is in use");
        }
        try {
            latch.start();
        } catch (Exception e) {
            HOLDERS.remove(key(cid, hid), latch);
            throw e;
        }
        return "started";
    }

    private static String doubleBarrierEnter(String cid, String hid, String path, int memberQty, long ms)
            throws Exception {
        CuratorFramework client = client(cid);
        DoubleBarrierHolder h = (DoubleBarrierHolder) HOLDERS.computeIfAbsent(key(cid, hid),
                x -> new DoubleBarrierHolder(client, path, memberQty));
        checkPath(h.path, path, hid);
        if (ms < 0) {
            h.barrier.enter();
            return "true";
        }
        return Boolean.toString(h.barrier.enter(ms, TimeUnit.MILLISECONDS));
    }

    private static String doubleBarrierLeave(String cid, String hid, long ms) throws Exception {
        DoubleBarrierHolder h = holder(cid, hid, DoubleBarrierHolder.class);
        boolean left;
        if (ms < 0) {
            h.barrier.leave();
            left = true;
        } else {
            left = h.barrier.leave(ms, TimeUnit.MILLISECONDS);
        }
        if (left) {
            HOLDERS.remove(key(cid, hid), h);
        }
        return Boolean.toString(left);
    }

    // ----------------------------------------------------------------------------------------
    // Plain nodes, CuratorCache

    /** Creates a persistent node (missing parents as persistent nodes); answers its czxid. */
    private static String nodeCreate(String cid, String path, byte[] data) throws Exception {
        Stat stat = new Stat();
        client(cid).create().storingStatIn(stat).creatingParentsIfNeeded().forPath(path, data);
        return Long.toString(stat.getCzxid());
    }

    private static String nodeDelete(String cid, String path, boolean recursive) throws Exception {
        if (recursive) {
            client(cid).delete().deletingChildrenIfNeeded().forPath(path);
        } else {
            client(cid).delete().forPath(path);
        }
        return "deleted";
    }

    private static String cacheStart(String cid, String hid, String path) {
        CacheHolder h = new CacheHolder(client(cid), path);
        if (HOLDERS.putIfAbsent(key(cid, hid), h) != null) {
            throw new IllegalStateException("holder " + hid + " is in use");
        }
        h.cache.start();
        return "started";
    }

    private static String groupStart(String cid, String hid, String path, String id, byte[] data) {
        GroupMember g = new GroupMember(client(cid), path, id, data);
        if (HOLDERS.putIfAbsent(key(cid, hid), g) != null) {
            throw new IllegalStateException("holder " + hid + " is in use");
        }
        g.start();
        return "started";
    }

    /** Curator's own serializer, as a ServiceDiscovery built without one uses it. */
    private static final JsonInstanceSerializer<Object> SERIALIZER = new JsonInstanceSerializer<>(Object.class);

    private static String discoveryStart(String cid, String hid, String base) throws Exception {
        ServiceDiscovery<Object> d = ServiceDiscoveryBuilder.builder(Object.class)
                .client(client(cid)).basePath(base).serializer(SERIALIZER).build();
        if (HOLDERS.putIfAbsent(key(cid, hid), d) != null) {
            throw new IllegalStateException("holder " + hid + " is in use");
        }
        d.start();
        return "started";
    }

    @SuppressWarnings("unchecked")
    private static String discoveryCacheStart(String cid, String hid, String cacheHid, String name) throws Exception {
        ServiceCache<Object> c = holder(cid, hid, ServiceDiscovery.class).serviceCacheBuilder().name(name).build();
        if (HOLDERS.putIfAbsent(key(cid, cacheHid), c) != null) {
            throw new IllegalStateException("holder " + cacheHid + " is in use");
        }
        c.start();
        return "started";
    }

    /** An instance with a URI spec; the payload is the JSON given, as Jackson reads it (a map). */
    private static ServiceInstance<Object> instance(String name, String id, String address, String port,
            String sslPort, String hexPayload) throws Exception {
        ServiceInstanceBuilder<Object> b = ServiceInstance.builder().name(name).id(id).address(address)
                .port(Integer.parseInt(port)).uriSpec(new UriSpec("{scheme}://{address}:{port}"));
        if (!sslPort.equals("-")) {
            b.sslPort(Integer.parseInt(sslPort));
        }
        if (!hexPayload.equals("-")) {
            Object payload = new ObjectMapper().readValue(unhex(hexPayload), Object.class);
            if (payload instanceof Map) {
                ((Map<?, ?>) payload).remove("@class"); // Curator writes the map's own type
            }
            b.payload(payload);
        }
        return b.build();
    }

    /** "<n>" then, per service name sorted, the name. */
    private static String namesOf(ServiceDiscovery<?> d) throws Exception {
        List<String> names = new ArrayList<>(d.queryForNames());
        names.sort(null);
        return names.size() + (names.isEmpty() ? "" : " " + String.join(" ", names));
    }

    /** "<n>" then, per instance sorted by id, its JSON as Curator's serializer writes it, in hex. */
    @SuppressWarnings("unchecked")
    private static String instancesJson(Collection<?> instances) throws Exception {
        List<ServiceInstance<Object>> sorted = new ArrayList<>();
        for (Object i : instances) {
            sorted.add((ServiceInstance<Object>) i);
        }
        sorted.sort((x, y) -> x.getId().compareTo(y.getId()));
        StringBuilder b = new StringBuilder().append(sorted.size());
        for (ServiceInstance<Object> i : sorted) {
            b.append(' ').append(hex(SERIALIZER.serialize(i)));
        }
        return b.toString();
    }

    /** "<n>" then, per member sorted by id, "<id> <hexData|->". */
    private static String groupMembers(GroupMember g) {
        Map<String, byte[]> members = new TreeMap<>(g.getCurrentMembers());
        StringBuilder b = new StringBuilder().append(members.size());
        for (Map.Entry<String, byte[]> e : members.entrySet()) {
            b.append(' ').append(e.getKey()).append(' ').append(hex(e.getValue()));
        }
        return b.toString();
    }

    /** "<n>" then, per node sorted by path, "<path> <version> <czxid> <hexData|->". */
    private static String cacheContent(CuratorCache cache) {
        List<ChildData> nodes = new ArrayList<>();
        cache.stream().forEach(nodes::add);
        nodes.sort((x, y) -> x.getPath().compareTo(y.getPath()));
        StringBuilder b = new StringBuilder().append(nodes.size());
        for (ChildData d : nodes) {
            b.append(' ').append(d.getPath())
                    .append(' ').append(d.getStat().getVersion())
                    .append(' ').append(d.getStat().getCzxid())
                    .append(' ').append(hex(d.getData()));
        }
        return b.toString();
    }

    /** `-` for no bytes, else lowercase hex (also for CompressionCommands). */
    static byte[] unhex(String s) {
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

    /** `?` for no data held, `-` for no bytes, else lowercase hex. */
    static String hex(byte[] data) {
        if (data == null) {
            return "?";
        }
        if (data.length == 0) {
            return "-";
        }
        StringBuilder b = new StringBuilder(data.length * 2);
        for (byte x : data) {
            b.append(String.format("%02x", x & 0xff));
        }
        return b.toString();
    }

    // ----------------------------------------------------------------------------------------
    // Helpers

    private static String key(String cid, String hid) {
        return cid + '\0' + hid;
    }

    private static <T> T holder(String cid, String hid, Class<T> type) {
        client(cid);
        Object h = HOLDERS.get(key(cid, hid));
        if (h == null) {
            throw new IllegalStateException("holder " + hid + " of client " + cid + " holds nothing");
        }
        if (!type.isInstance(h)) {
            throw new IllegalStateException("holder " + hid + " is a " + h.getClass().getSimpleName()
                    + ", not a " + type.getSimpleName());
        }
        return type.cast(h);
    }

    private static void checkPath(String held, String wanted, String hid) {
        if (!held.equals(wanted)) {
            throw new IllegalStateException("holder " + hid + " is in use on " + held);
        }
    }

    private static void need(String[] a, int n, String usage) {
        if (a.length < n) {
            throw new IllegalArgumentException("usage: " + usage);
        }
    }

    private static void respond(String rid, String text) {
        synchronized (CuratorPeer.class) {
            out.print(rid + " " + text.replace('\r', ' ').replace('\n', ' ') + "\n");
            out.flush();
        }
    }

    private static void err(String rid, Throwable t) {
        while ((t instanceof ExecutionException || t instanceof CompletionException
                || t instanceof InvocationTargetException) && t.getCause() != null) {
            t = t.getCause();
        }
        String msg = t.getMessage() == null ? "" : t.getMessage();
        respond(rid, "ERR " + t.getClass().getSimpleName() + " " + msg);
    }

    private static ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, name + "-" + THREAD_SEQ.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    /** Closes every client (ending their sessions) within maxMs, then halts the JVM. */
    private static void shutdown(long maxMs) {
        Thread closer = new Thread(() -> {
            for (CuratorFramework client : CLIENTS.values()) {
                try {
                    client.close();
                } catch (Throwable ignored) {
                    // best effort: the process is going away
                }
            }
        }, "peer-shutdown");
        closer.setDaemon(true);
        closer.start();
        try {
            closer.join(maxMs);
        } catch (InterruptedException ignored) {
            Thread.currentThread().interrupt();
        }
        out.flush();
        Runtime.getRuntime().halt(0);
    }

    // --- queues ---

    /** A started Curator queue with a consumer that records what it was handed, in order. */
    private static final class QueueHolder {
        final List<String> consumed = new ArrayList<>();
        org.apache.curator.framework.recipes.queue.QueueBase<byte[]> queue;
    }

    private static final org.apache.curator.framework.recipes.queue.QueueSerializer<byte[]> RAW =
            new org.apache.curator.framework.recipes.queue.QueueSerializer<byte[]>() {
                @Override
                public byte[] serialize(byte[] item) {
                    return item;
                }

                @Override
                public byte[] deserialize(byte[] bytes) {
                    return bytes;
                }
            };

    private static org.apache.curator.framework.recipes.queue.QueueBuilder<byte[]> queueBuilder(
            CuratorFramework client, org.apache.curator.framework.recipes.queue.QueueConsumer<byte[]> consumer,
            String path) {
        return org.apache.curator.framework.recipes.queue.QueueBuilder.builder(client, consumer, RAW, path)
                .putInBackground(false);
    }

    /** Puts the items: a simple queue offers each; the other kinds put one node (putMulti for several). */
    private static String queuePut(CuratorFramework client, String path, String kind, String arg, String[] hexItems)
            throws Exception {
        List<byte[]> items = new ArrayList<>();
        for (String h : hexItems) {
            items.add(unhex(h));
        }
        if (kind.equals("simple")) {
            org.apache.curator.framework.recipes.queue.SimpleDistributedQueue q =
                    new org.apache.curator.framework.recipes.queue.SimpleDistributedQueue(client, path);
            for (byte[] item : items) {
                q.offer(item);
            }
            return "put";
        }
        Iterator<byte[]> it = items.iterator();
        org.apache.curator.framework.recipes.queue.MultiItem<byte[]> multi = () -> it.hasNext() ? it.next() : null;
        org.apache.curator.framework.recipes.queue.QueueBuilder<byte[]> b = queueBuilder(client, null, path);
        switch (kind) {
            case "distributed": {
                org.apache.curator.framework.recipes.queue.DistributedQueue<byte[]> q = b.buildQueue();
                q.start();
                if (items.size() == 1) {
                    q.put(items.get(0));
                } else {
                    q.putMulti(multi);
                }
                q.close();
                return "put";
            }
            case "id": {
                org.apache.curator.framework.recipes.queue.DistributedIdQueue<byte[]> q = b.buildIdQueue();
                q.start();
                q.put(items.get(0), arg);
                q.close();
                return "put";
            }
            case "priority": {
                org.apache.curator.framework.recipes.queue.DistributedPriorityQueue<byte[]> q = b.buildPriorityQueue(0);
                q.start();
                q.putMulti(multi, Integer.parseInt(arg));
                q.close();
                return "put";
            }
            case "delay": {
                org.apache.curator.framework.recipes.queue.DistributedDelayQueue<byte[]> q = b.buildDelayQueue();
                q.start();
                q.putMulti(multi, Long.parseLong(arg));
                q.close();
                return "put";
            }
            default:
                throw new IllegalArgumentException("unknown queue kind " + kind);
        }
    }

    /** SimpleDistributedQueue.poll: the item in hex, or "none" when the timeout passed. */
    private static String queueSimplePoll(CuratorFramework client, String path, long timeoutMs) throws Exception {
        byte[] item = new org.apache.curator.framework.recipes.queue.SimpleDistributedQueue(client, path)
                .poll(timeoutMs, TimeUnit.MILLISECONDS);
        return item == null ? "none" : hex(item);
    }

    private static String queueConsumeStart(String cid, String hid, String path, String kind, String lockPath)
            throws Exception {
        QueueHolder h = new QueueHolder();
        if (HOLDERS.putIfAbsent(key(cid, hid), h) != null) {
            throw new IllegalStateException("holder " + hid + " is in use");
        }
        org.apache.curator.framework.recipes.queue.QueueConsumer<byte[]> consumer =
                new org.apache.curator.framework.recipes.queue.QueueConsumer<byte[]>() {
                    @Override
                    public void consumeMessage(byte[] message) {
                        synchronized (h.consumed) {
                            h.consumed.add(hex(message));
                        }
                    }

                    @Override
                    public void stateChanged(CuratorFramework client,
                            org.apache.curator.framework.state.ConnectionState newState) {
                        // the recipe reacts itself
                    }
                };
        org.apache.curator.framework.recipes.queue.QueueBuilder<byte[]> b = queueBuilder(client(cid), consumer, path);
        if (!lockPath.equals("-")) {
            b = b.lockPath(lockPath);
        }
        switch (kind) {
            case "distributed": h.queue = b.buildQueue(); break;
            case "id": h.queue = b.buildIdQueue(); break;
            case "priority": h.queue = b.buildPriorityQueue(0); break;
            case "delay": h.queue = b.buildDelayQueue(); break;
            default:
                HOLDERS.remove(key(cid, hid), h);
                throw new IllegalArgumentException("unknown queue kind " + kind);
        }
        h.queue.start();
        return "started";
    }

    /** Every item consumed so far, in order: {@code <n>} then one hex item each. */
    private static String queueConsumed(QueueHolder h) {
        synchronized (h.consumed) {
            StringBuilder b = new StringBuilder(Integer.toString(h.consumed.size()));
            for (String item : h.consumed) {
                b.append(' ').append(item);
            }
            return b.toString();
        }
    }

    /** DistributedIdQueue.remove(id) on a producer-only id queue: how many were removed. */
    private static String queueRemove(CuratorFramework client, String path, String id) throws Exception {
        org.apache.curator.framework.recipes.queue.DistributedIdQueue<byte[]> q =
                queueBuilder(client, null, path).buildIdQueue();
        q.start();
        try {
            return Integer.toString(q.remove(id));
        } finally {
            q.close();
        }
    }

    // --- shared by the blocks below: a dedicated thread per (client, holder) ---

    /**
     * Runs {@code body} on the holder's own thread (Curator's mutexes belong to the thread that
     * acquired them); the thread is shut down with the client.
     */
    private static <T> T onOwnThread(String cid, String hid, java.util.concurrent.Callable<T> body) throws Exception {
        return ownThread(cid, hid).submit(body).get();
    }

    private static ExecutorService ownThread(String cid, String hid) {
        return HOLDER_THREADS.computeIfAbsent(key(cid, hid) + "\0own",
                k -> Executors.newSingleThreadExecutor(daemon("peer-holder")));
    }

    // --- leader selector ---

    /** A LeaderSelector whose takeLeadership holds on until selector.relinquish (or a loss). */
    private static final class SelectorHolder implements Closeable {
        final org.apache.curator.framework.recipes.leader.LeaderSelector selector;
        final AtomicInteger terms = new AtomicInteger();
        volatile boolean leading;
        volatile CountDownLatch relinquish = new CountDownLatch(1);

        SelectorHolder(CuratorFramework client, String path, String id) {
            selector = new org.apache.curator.framework.recipes.leader.LeaderSelector(client, path,
                    new org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter() {
                        @Override
                        public void takeLeadership(CuratorFramework c) throws Exception {
                            CountDownLatch release = new CountDownLatch(1);
                            relinquish = release;
                            terms.incrementAndGet();
                            leading = true;
                            try {
                                release.await();
                            } finally {
                                leading = false;
                            }
                        }
                    });
            selector.setId(id);
        }

        @Override
        public void close() {
            relinquish.countDown();
            selector.close();
        }
    }

    private static String selectorCommand(String cmd, String[] a) throws Exception {
        switch (cmd) {
            case "selector.start": {
                need(a, 4, "selector.start <cid> <hid> <path> <id>");
                SelectorHolder h = new SelectorHolder(client(a[0]), a[2], a[3]);
                if (HOLDERS.putIfAbsent(key(a[0], a[1]), h) != null) {
                    throw new IllegalStateException("holder " + a[1] + " is in use");
                }
                h.selector.start();
                return "started";
            }
            case "selector.has":
                need(a, 2, "selector.has <cid> <hid>");
                return Boolean.toString(holder(a[0], a[1], SelectorHolder.class).leading);
            case "selector.await": {
                need(a, 3, "selector.await <cid> <hid> <timeoutMs>");
                SelectorHolder h = holder(a[0], a[1], SelectorHolder.class);
                long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Long.parseLong(a[2]));
                while (!h.leading && System.nanoTime() < deadline) {
                    Thread.sleep(5);
                }
                return Boolean.toString(h.leading);
            }
            case "selector.terms":
                need(a, 2, "selector.terms <cid> <hid>");
                return Integer.toString(holder(a[0], a[1], SelectorHolder.class).terms.get());
            case "selector.relinquish": {
                need(a, 2, "selector.relinquish <cid> <hid>");
                SelectorHolder h = holder(a[0], a[1], SelectorHolder.class);
                if (!h.leading) {
                    throw new IllegalStateException("holder " + a[1] + " does not lead");
                }
                h.relinquish.countDown();
                return "relinquished";
            }
            case "selector.requeue":
                need(a, 2, "selector.requeue <cid> <hid>");
                return Boolean.toString(holder(a[0], a[1], SelectorHolder.class).selector.requeue());
            case "selector.leader":
                need(a, 2, "selector.leader <cid> <hid>");
                return holder(a[0], a[1], SelectorHolder.class).selector.getLeader().getId();
            case "selector.close": {
                need(a, 2, "selector.close <cid> <hid>");
                SelectorHolder h = holder(a[0], a[1], SelectorHolder.class);
                HOLDERS.remove(key(a[0], a[1]), h);
                h.close();
                return "closed";
            }
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    // --- multi-lock ---

    private static String multiLockCommand(String cmd, String[] a) throws Exception {
        switch (cmd) {
            case "multilock.acquire": {
                need(a, 4, "multilock.acquire <cid> <hid> <path>[,<path>...] <timeoutMs>");
                CuratorFramework client = client(a[0]);
                String k = key(a[0], a[1]);
                long ms = Long.parseLong(a[3]);
                return onOwnThread(a[0], a[1], () -> {
                    if (HOLDERS.containsKey(k)) {
                        throw new IllegalStateException("holder " + a[1] + " is in use");
                    }
                    org.apache.curator.framework.recipes.locks.InterProcessMultiLock lock =
                            new org.apache.curator.framework.recipes.locks.InterProcessMultiLock(client,
                                    java.util.Arrays.asList(a[2].split(",")));
                    boolean ok;
                    if (ms < 0) {
                        lock.acquire();
                        ok = true;
                    } else {
                        ok = lock.acquire(ms, TimeUnit.MILLISECONDS);
                    }
                    if (ok) {
                        HOLDERS.put(k, lock);
                    }
                    return Boolean.toString(ok);
                });
            }
            case "multilock.release": {
                need(a, 2, "multilock.release <cid> <hid>");
                org.apache.curator.framework.recipes.locks.InterProcessMultiLock lock =
                        holder(a[0], a[1], org.apache.curator.framework.recipes.locks.InterProcessMultiLock.class);
                return onOwnThread(a[0], a[1], () -> {
                    lock.release();
                    HOLDERS.remove(key(a[0], a[1]), lock);
                    return "released";
                });
            }
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    // --- shared value, atomic value ---

    /** A started SharedValue and the versioned value it read last (what tryset compares with). */
    private static final class SharedValueHolder implements Closeable {
        final org.apache.curator.framework.recipes.shared.SharedValue value;
        volatile VersionedValue<byte[]> last;

        SharedValueHolder(CuratorFramework client, String path, byte[] seed) {
            value = new org.apache.curator.framework.recipes.shared.SharedValue(client, path, seed);
        }

        @Override
        public void close() throws java.io.IOException {
            value.close();
        }
    }

    private static String formatBytes(AtomicValue<byte[]> v) {
        return v.succeeded() + " " + hex(v.preValue()) + " " + hex(v.postValue());
    }

    private static org.apache.curator.framework.recipes.atomic.DistributedAtomicValue atomicValue(String cid,
            String path) {
        return new org.apache.curator.framework.recipes.atomic.DistributedAtomicValue(client(cid), path,
                new RetryNTimes(1000, 1));
    }

    private static String valueCommand(String cmd, String[] a) throws Exception {
        switch (cmd) {
            case "sharedvalue.start": {
                need(a, 4, "sharedvalue.start <cid> <hid> <path> <hexSeed|->");
                SharedValueHolder h = new SharedValueHolder(client(a[0]), a[2], unhex(a[3]));
                if (HOLDERS.putIfAbsent(key(a[0], a[1]), h) != null) {
                    throw new IllegalStateException("holder " + a[1] + " is in use");
                }
                h.value.start();
                return "started";
            }
            case "sharedvalue.read": {
                need(a, 2, "sharedvalue.read <cid> <hid>");
                SharedValueHolder h = holder(a[0], a[1], SharedValueHolder.class);
                VersionedValue<byte[]> v = h.value.getVersionedValue();
                h.last = v;
                return v.getVersion() + " " + hex(v.getValue());
            }
            case "sharedvalue.tryset": {
                need(a, 3, "sharedvalue.tryset <cid> <hid> <hexData|->");
                SharedValueHolder h = holder(a[0], a[1], SharedValueHolder.class);
                if (h.last == null) {
                    throw new IllegalStateException("holder " + a[1] + " has read nothing yet");
                }
                return Boolean.toString(h.value.trySetValue(h.last, unhex(a[2])));
            }
            case "sharedvalue.set":
                need(a, 3, "sharedvalue.set <cid> <hid> <hexData|->");
                holder(a[0], a[1], SharedValueHolder.class).value.setValue(unhex(a[2]));
                return "set";
            case "sharedvalue.close": {
                need(a, 2, "sharedvalue.close <cid> <hid>");
                SharedValueHolder h = holder(a[0], a[1], SharedValueHolder.class);
                HOLDERS.remove(key(a[0], a[1]), h);
                h.close();
                return "closed";
            }
            case "atomicvalue.get":
                need(a, 2, "atomicvalue.get <cid> <path>");
                return formatBytes(atomicValue(a[0], a[1]).get());
            case "atomicvalue.cas":
                need(a, 4, "atomicvalue.cas <cid> <path> <expectedHex|-> <newHex|->");
                return formatBytes(atomicValue(a[0], a[1]).compareAndSet(unhex(a[2]), unhex(a[3])));
            case "atomicvalue.tryset":
                need(a, 3, "atomicvalue.tryset <cid> <path> <newHex|->");
                return formatBytes(atomicValue(a[0], a[1]).trySet(unhex(a[2])));
            case "atomicvalue.force":
                need(a, 3, "atomicvalue.force <cid> <path> <newHex|->");
                atomicValue(a[0], a[1]).forceSet(unhex(a[2]));
                return "set";
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    // --- persistent nodes, TTL nodes, session expiry ---

    private static String persistentNodeCommand(String cmd, String[] a) throws Exception {
        switch (cmd) {
            case "pnode.start": {
                need(a, 5, "pnode.start <cid> <hid> <path> <ephemeral|protected|persistent> <hexData|->");
                org.apache.zookeeper.CreateMode mode;
                boolean protection = false;
                switch (a[3]) {
                    case "ephemeral": mode = org.apache.zookeeper.CreateMode.EPHEMERAL; break;
                    case "protected":
                        mode = org.apache.zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL;
                        protection = true;
                        break;
                    case "persistent": mode = org.apache.zookeeper.CreateMode.PERSISTENT; break;
                    default: throw new IllegalArgumentException("unknown mode " + a[3]);
                }
                org.apache.curator.framework.recipes.nodes.PersistentNode n =
                        new org.apache.curator.framework.recipes.nodes.PersistentNode(client(a[0]), mode, protection,
                                a[2], unhex(a[4]));
                if (HOLDERS.putIfAbsent(key(a[0], a[1]), n) != null) {
                    throw new IllegalStateException("holder " + a[1] + " is in use");
                }
                n.start();
                return "started";
            }
            case "pnode.await":
                need(a, 3, "pnode.await <cid> <hid> <timeoutMs>");
                return Boolean.toString(holder(a[0], a[1], org.apache.curator.framework.recipes.nodes.PersistentNode.class)
                        .waitForInitialCreate(Long.parseLong(a[2]), TimeUnit.MILLISECONDS));
            case "pnode.path":
                need(a, 2, "pnode.path <cid> <hid>");
                return String.valueOf(holder(a[0], a[1], org.apache.curator.framework.recipes.nodes.PersistentNode.class)
                        .getActualPath());
            case "pnode.set":
                need(a, 3, "pnode.set <cid> <hid> <hexData|->");
                holder(a[0], a[1], org.apache.curator.framework.recipes.nodes.PersistentNode.class).setData(unhex(a[2]));
                return "set";
            case "ttlnode.start": {
                need(a, 5, "ttlnode.start <cid> <hid> <path> <ttlMs> <hexData|->");
                org.apache.curator.framework.recipes.nodes.PersistentTtlNode n =
                        new org.apache.curator.framework.recipes.nodes.PersistentTtlNode(client(a[0]), a[2],
                                Long.parseLong(a[3]), unhex(a[4]));
                if (HOLDERS.putIfAbsent(key(a[0], a[1]), n) != null) {
                    throw new IllegalStateException("holder " + a[1] + " is in use");
                }
                n.start();
                return "started";
            }
            case "ttlnode.await":
                need(a, 3, "ttlnode.await <cid> <hid> <timeoutMs>");
                return Boolean.toString(holder(a[0], a[1], org.apache.curator.framework.recipes.nodes.PersistentTtlNode.class)
                        .waitForInitialCreate(Long.parseLong(a[2]), TimeUnit.MILLISECONDS));
            case "pnode.close":
            case "ttlnode.close": {
                need(a, 2, cmd + " <cid> <hid>");
                Closeable h = holder(a[0], a[1], Closeable.class);
                HOLDERS.remove(key(a[0], a[1]), h);
                h.close();
                return "closed";
            }
            case "pnode.read": {
                need(a, 2, "pnode.read <cid> <path>");
                Stat stat = new Stat();
                try {
                    byte[] data = client(a[0]).getData().storingStatIn(stat).forPath(a[1]);
                    return stat.getEphemeralOwner() + " " + stat.getCzxid() + " " + hex(data);
                } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
                    return "none";
                }
            }
            case "session.expire":
                need(a, 1, "session.expire <cid>");
                return expireSession(a[0]);
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    /**
     * Expires the client's session on the server (as the Rust kit's expire_session): an impostor
     * connects with the session's id and password and sends closeSession in the same write, so the
     * client cannot take the session back in between; repeated until the client sees a new session.
     * Answers the new session id once connected again.
     */
    private static String expireSession(String cid) throws Exception {
        CuratorFramework client = client(cid);
        org.apache.zookeeper.ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
        long old = zk.getSessionId();
        byte[] passwd = zk.getSessionPasswd();
        int timeout = zk.getSessionTimeout();
        String first = client.getZookeeperClient().getCurrentConnectionString().split(",")[0];
        int slash = first.indexOf('/');
        if (slash >= 0) {
            first = first.substring(0, slash);
        }
        String host = first.substring(0, first.lastIndexOf(':'));
        int port = Integer.parseInt(first.substring(first.lastIndexOf(':') + 1));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try (java.net.Socket socket = new java.net.Socket(host, port)) {
                socket.setSoTimeout(2000);
                java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
                java.io.DataOutputStream w = new java.io.DataOutputStream(bytes);
                w.writeInt(4 + 8 + 4 + 8 + 4 + passwd.length + 1);
                w.writeInt(0); // protocol version
                w.writeLong(0); // last zxid seen
                w.writeInt(timeout);
                w.writeLong(old);
                w.writeInt(passwd.length);
                w.write(passwd);
                w.writeBoolean(false); // read-only
                w.writeInt(8);
                w.writeInt(1); // xid
                w.writeInt(-11); // closeSession
                w.flush();
                socket.getOutputStream().write(bytes.toByteArray());
                socket.getOutputStream().flush();
                try {
                    java.io.InputStream in = socket.getInputStream();
                    byte[] sink = new byte[256];
                    while (in.read(sink) >= 0) {
                        // drain until the server closes the connection
                    }
                } catch (java.io.IOException ignored) {
                    // timed out or reset: the session is closed or the client took it back
                }
            }
            long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            while (System.nanoTime() < waitUntil) {
                long now = client.getZookeeperClient().getZooKeeper().getSessionId();
                if (now != old && now != 0) {
                    if (!client.blockUntilConnected(20, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("no new session after the expiry");
                    }
                    return Long.toString(client.getZookeeperClient().getZooKeeper().getSessionId());
                }
                Thread.sleep(20);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the session survived every attempt to expire it");
            }
        }
    }

    // --- lock revocation ---

    /** An InterProcessMutex made revocable; its listener releases the hold on the holder's thread. */
    private static final class RevocableHolder {
        final InterProcessMutex mutex;
        final AtomicInteger requests = new AtomicInteger();
        volatile boolean held;

        RevocableHolder(CuratorFramework client, String path, ExecutorService own) {
            mutex = new InterProcessMutex(client, path);
            mutex.makeRevocable(lock -> {
                requests.incrementAndGet();
                own.execute(() -> {
                    if (held) {
                        try {
                            mutex.release();
                            held = false;
                        } catch (Exception ignored) {
                            // stays held: the test sees it
                        }
                    }
                });
            });
        }
    }

    private static String revocationCommand(String cmd, String[] a) throws Exception {
        switch (cmd) {
            case "revmutex.acquire": {
                need(a, 4, "revmutex.acquire <cid> <hid> <path> <timeoutMs>");
                CuratorFramework client = client(a[0]);
                String k = key(a[0], a[1]);
                ExecutorService own = ownThread(a[0], a[1]);
                long ms = Long.parseLong(a[3]);
                return onOwnThread(a[0], a[1], () -> {
                    RevocableHolder h = (RevocableHolder) HOLDERS.computeIfAbsent(k,
                            x -> new RevocableHolder(client, a[2], own));
                    if (h.held) {
                        throw new IllegalStateException("holder " + a[1] + " holds already");
                    }
                    boolean ok = acquire(h.mutex, ms);
                    h.held = ok;
                    return Boolean.toString(ok);
                });
            }
            case "revmutex.state": {
                need(a, 2, "revmutex.state <cid> <hid>");
                RevocableHolder h = holder(a[0], a[1], RevocableHolder.class);
                return h.held + " " + h.requests.get();
            }
            case "revmutex.release": {
                need(a, 2, "revmutex.release <cid> <hid>");
                RevocableHolder h = holder(a[0], a[1], RevocableHolder.class);
                return onOwnThread(a[0], a[1], () -> {
                    boolean was = h.held;
                    if (was) {
                        h.mutex.release();
                        h.held = false;
                    }
                    HOLDERS.remove(key(a[0], a[1]), h);
                    return Boolean.toString(was);
                });
            }
            case "revoke.attempt":
                need(a, 2, "revoke.attempt <cid> <nodePath>");
                org.apache.curator.framework.recipes.locks.Revoker.attemptRevoke(client(a[0]), a[1]);
                return "requested";
            default:
                throw new IllegalArgumentException("unknown command " + cmd);
        }
    }
}
