"""The descriptions of the recipes in bench/RESULTS.md (used by bench/report.py)."""

RECIPE_NOTES = {
    "mutex": "Acquire, empty critical section, release, in a loop. zk-recipes `InterProcessMutex`; Curator "
    "`InterProcessMutex`; kazoo `Lock`; zookeeper-client's own lock recipe (`Client::lock`, peer `zookeeper-client`).",
    "entity": "The per-entity mutex (a lock per SKU, order or account, the shape services use): one process, one "
    "session, T tasks (the *tasks* column); each loop picks one of P entities uniformly at random, takes that "
    "entity's mutex, decrements the entity's stock under it (a read and a versioned `setData` of its stock node) "
    "and releases. Most acquires are uncontended: what this measures is how well one session pipelines many short "
    "locks. zk-recipes `InterProcessMutex` (one handle per entity, shared by the tasks), the stock write and the "
    "release in one commit (`LockGuard::commit_and_release` without a marker: one write; the others write, then "
    "release); zookeeper-client its own "
    "lock recipe (`Client::lock`) and plain requests; Curator `InterProcessMutex` (one per entity, shared by T "
    "threads on one `CuratorFramework`); kazoo a fresh `Lock` per acquire (a kazoo `Lock` is not for two threads "
    "at once), T threads on one `KazooClient` under the GIL. Latency is the acquire. After the window every entity's stock is read back: an entity whose stock "
    "did not end exact (the initial stock less the decrements made) is a violation.",
    "holders": "N distinct locks held at once by one process over one session (a lock per entity, every entity "
    "locked; lock paths `g-<k / 1000>/h-<k>`, at most 1,000 under one parent), with the *tasks* column's acquires "
    "in flight: the time to acquire them all, the time to release them all, and the process's resident memory "
    "(VmRSS) before and with all of them held; *RSS per lock* = (RSS − RSS before) / N. Curator's driver adds "
    "the JVM heap in use (after `System.gc()`).",
    "rwlock": "75 % reads, 25 % writes (per-client seeded random). zk-recipes `InterProcessReadWriteLock`; "
    "Curator `InterProcessReadWriteLock`; kazoo `ReadLock`/`WriteLock`.",
    "semaphore": "Each operation takes 1 of K leases (K = {leases}) and returns it. zk-recipes "
    "`InterProcessSemaphoreV2`; Curator `InterProcessSemaphoreV2`; kazoo `Semaphore(max_leases=K)` "
    "(its own design, with an internal lock).",
    "semaphore_mutex": "Non-reentrant mutex built on a one-lease semaphore. zk-recipes and Curator "
    "`InterProcessSemaphoreMutex`; kazoo has none.",
    "counter": "Atomic increment by 1; latency is the call. zk-recipes `DistributedAtomicLong`; Curator "
    "`DistributedAtomicLong` with `RetryNTimes(10, 10 ms)`: when its optimistic retries run out under "
    "contention it reports `succeeded() == false`, counted as an error (not retried); kazoo `Counter` "
    "(default command retry: unlimited tries, 0.1 s doubling back-off).",
    "shared_count": "Versioned increment from the last value known, repeated until it succeeds: Curator "
    "`getVersionedValue` (local) + `trySetCount(version, n + 1)` (a refusal reads the value), zk-recipes "
    "`SharedCount::compare_and_set` (a refusal reads and returns the value that won); one operation = one "
    "successful increment. kazoo has none.",
    "double_barrier": "All clients enter and leave a `DistributedDoubleBarrier` (kazoo `DoubleBarrier`) on a "
    "fresh path per round; one operation = one round completed by every member, its latency from the first "
    "member's enter to the last member's leave. With 1 client it is one member entering and leaving. A member "
    "that never returns stops the run (its round is one failed operation): Curator 5.4's `enter` can fall into an "
    "untimed `wait()` despite its timeout when its watcher fired before it waited, and kazoo's `enter` has no "
    "timeout (the driver gives up after 30 s); such runs are marked ⚠ and pull the medians down.",
    "shedlock": "Scheduled ticks of one job decided by R replicas (the *clients* column; each its own session): per "
    "tick every replica tries the job's lock once, without waiting; exactly one takes it; once all have answered "
    "(the tick is *decided*) the winner unlocks with `lockAtLeastFor` 0 and the next tick starts. One operation = "
    "one tick decided, so *ops/s* is ticks/s; latency runs from the tick's start to its last answer. After the first "
    "tick the node exists, so a tick is taken by a versioned `setData` of the instant the last unlock wrote (the "
    "steady state of a deployment). zk-recipes `ShedLock::try_lock` + `ScheduledLockGuard::unlock`; Curator: a "
    "ShedLock-shaped lock on Curator (ShedLock's ZooKeeper provider's reads and writes, unversioned unlock; ShedLock "
    "itself is not used), one `CuratorFramework` and one thread per replica. A tick won by two replicas, or by none "
    "while nothing had failed, is a violation. kazoo and zookeeper-client have none.",
}

COUNTER_TASKS_NOTE = ("*1 × T tasks*: one process, one session (one framework), T concurrent tasks incrementing one "
                      "counter (zk-recipes: one `DistributedAtomicLong` handle shared by the tasks; Curator: T threads "
                      "on one `CuratorFramework`). Every counter run checks that the final value equals the "
                      "successful increments (none lost, none counted twice) and, for zk-recipes, that no two "
                      "increments were handed the same `post_value`; a miss is a violation.")

LIMIT_NOTE = ("The *pipelined create+delete limit* (`raw`, 1 client × T tasks) is one session with T create+delete "
              "pairs in flight (`zkr bench --recipe raw --clients 1 --tasks T`), measured in every repeat in the same "
              "rotating turn as the per-entity mutex rows of the same T: an entity's operation needs at least its "
              "lock node's create and delete, so this is the rate one session reaches with that much in flight, "
              "the physical reference of the per-entity mutex's *× limit*.")

CEILING_NOTE = ("The *per-entity ceiling* (`raw_entity`, 1 client × T tasks, in the same turn) sends what an "
                "uncontended per-entity sale sends and nothing else, with no lock's logic: each task's ephemeral "
                "sequential create in its own lock directory, pipelined with that directory's listing and a read "
                "of its stock node, then one `multi` setting the stock and deleting the node. A Curator-compatible "
                "lock lists after its create to know it holds, and a decrement reads before it writes, so no lock "
                "on that workload sends less: its share of the limit (*of the limit*) is the most any per-entity "
                "mutex can reach in that setting, and the entity table's *× ceiling* how close we come to it.")

ENTITY_TABLE_NOTE = ("One process, one session, T tasks locking one of P entities each (uniform), decrementing its "
                     "stock under the lock, releasing. *× limit*: ops/s over the pipelined create+delete limit "
                     "with the same T tasks, same setting and repeat (floor table); *× ceiling*: over the per-entity "
                     "ceiling, the same requests without a lock (floor table). Latency is the acquire. A "
                     "violation is an entity whose stock did not end exact.")
