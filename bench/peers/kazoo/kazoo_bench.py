#!/usr/bin/env python3
"""Benchmark driver for kazoo's recipes, the "kazoo" peer of bench/compare.sh.

Contract (bench/README.md): exactly one JSON line on stdout, everything else on stderr.

    kazoo_bench.py --connect HOSTS --recipe R --clients N --seconds D
                   [--warmup-seconds W] [--base PATH] [--leases K] [--waiters W]
                   [--tasks T] [--paths P] [--skew uniform|zipf]

One OS process per client (kazoo runs recipes on threads under the GIL, so clients in one
process would measure the GIL), each with its own KazooClient and so its own session,
coordinated by this parent process: the clients connect first (untimed), then all loop for the
warm-up, then for the measured window; an operation counts when it starts and finishes inside
the window. Clocks are time.monotonic(), which is CLOCK_MONOTONIC and so comparable across the
processes of one machine. With several hosts in --connect, client i connects to host i mod k
alone, so the sessions spread over an ensemble's servers.

Recipes: mutex (Lock), rwlock (ReadLock/WriteLock), semaphore (Semaphore, max_leases=K),
counter (Counter), double_barrier (DoubleBarrier) and drain (Lock, W waiter threads over the
--clients sessions of one process); the floors raw (an ephemeral node created and deleted) and
raw_set (versioned sets of one node, back to back), plain requests without a recipe. kazoo has no semaphore mutex and no versioned shared count:
those exit 2, as does holders (N locks held at once: run for zk-recipes and Curator only).
Exit 64 for other usage errors, 1 when the run could not be carried out.

entity, a lock per entity, runs in this process on ONE KazooClient (--clients must be 1) with
T threads (--tasks T, the only recipe that takes it): P persistent stock nodes <run>/stock/<k>
(k < P, --paths, default 1000; ASCII decimal 1000000000, created untimed), the lock
directories <run>/lock/<k> (created untimed), and each thread i
loops: pick k (random.Random(i); uniform, or Zipf with exponent 1 over the ranks with
--skew zipf), acquire a fresh Lock(<run>/lock/<k>) (a kazoo Lock is not for two threads at
once; latency = ask to hold), read the stock with its stat, set it less one at that version,
release. A refused versioned write is a violation; so is, after the window, an entity whose
stock is not 1000000000 less the decrements the threads counted. Extra fields tasks, paths,
worker_ops_min, worker_ops_max (per thread). The threads share the GIL: that is kazoo's cost.

bench/peers/kazoo/run.sh runs this with kazoo installed in a virtualenv.
"""

import argparse
import bisect
import json
import math
import multiprocessing as mp
import os
import random
import signal
import sys
import threading
import time
import traceback
import uuid

PEER = "kazoo"
SUPPORTED = ("mutex", "rwlock", "semaphore", "counter", "double_barrier", "drain", "raw", "raw_set", "entity")
UNSUPPORTED = {
    "semaphore_mutex": "kazoo has no non-reentrant semaphore mutex "
    "(Curator's InterProcessSemaphoreMutex); its Semaphore with max_leases=1 is a different recipe",
    "shared_count": "kazoo has no SharedCount (versioned get + trySetCount); its Counter is measured as `counter`",
    "holders": "the holders run (N locks held at once by one session: memory per held lock) "
    "is measured for zk-recipes and Curator only",
}
# How long one blocking call may take before it counts as an error (seconds).
OP_TIMEOUT = 60.0
# kazoo's DoubleBarrier.enter/leave take no timeout; a member stuck this long fails the run.
BARRIER_TIMEOUT = 30.0
# entity: every stock node's value when a run starts.
STOCK = 1_000_000_000
# How long the cleanup of the entity nodes may take (seconds).
CLEANUP_TIMEOUT = 120.0


def log(msg):
    # one write per line: the entity threads log concurrently
    sys.stderr.write(f"kazoo_bench: {msg}\n")
    sys.stderr.flush()


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def parse_args(argv):
    p = Parser(prog="kazoo_bench.py", add_help=True)
    p.add_argument("--connect", required=True)
    p.add_argument("--recipe", required=True)
    p.add_argument("--clients", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--warmup-seconds", type=float, default=2.0)
    p.add_argument("--base", default="/bench")
    p.add_argument("--leases", type=int, default=2)
    p.add_argument("--waiters", type=int, default=500)
    p.add_argument("--tasks", type=int, default=1)
    p.add_argument("--paths", type=int, default=1000)
    p.add_argument("--skew", default="uniform")
    p.add_argument("--holders", type=int, default=100_000)  # parsed for holders' exit 2
    a = p.parse_args(argv)
    if a.clients < 1 or a.seconds <= 0 or a.warmup_seconds < 0 or a.leases < 1 or a.waiters < 1:
        raise UsageError("--clients, --leases, --waiters must be >= 1, --seconds > 0, --warmup-seconds >= 0")
    if a.tasks < 1 or a.paths < 1 or a.holders < 1:
        raise UsageError("--tasks, --paths and --holders must be >= 1")
    if a.skew not in ("uniform", "zipf"):
        raise UsageError(f"--skew must be uniform or zipf, not {a.skew}")
    if a.recipe == "entity" and a.clients != 1:
        raise UsageError("entity runs on one session: --clients must be 1 (threads: --tasks)")
    a.base = a.base.rstrip("/") or "/"
    if not a.base.startswith("/"):
        raise UsageError("--base must be an absolute path")
    return a


def percentile(sorted_values, p):
    """Nearest-rank percentile."""
    rank = math.ceil(p * len(sorted_values))
    return sorted_values[min(max(rank, 1), len(sorted_values)) - 1]


def result_line(args, latencies_ms, errors, violations, seconds, extra=None):
    lat = sorted(latencies_ms)
    ops = len(lat)
    out = {
        "peer": PEER,
        "recipe": args.recipe,
        "clients": args.clients,
        "seconds": round(seconds, 3),
        "ops": ops,
        "ops_per_s": round(ops / seconds, 1) if seconds > 0 else 0.0,
        "p50_ms": round(percentile(lat, 0.50), 3) if ops else None,
        "p99_ms": round(percentile(lat, 0.99), 3) if ops else None,
        "violations": violations,
        "errors": errors,
    }
    if args.recipe == "semaphore":
        out["leases"] = args.leases
    if extra:
        out.update(extra)
    return json.dumps(out, separators=(",", ":"))


def server_for(connect, i):
    """Client i's server: host i mod k of a connect string naming k hosts (its chroot kept)."""
    hosts, slash, chroot = connect.partition("/")
    hosts = [h.strip() for h in hosts.split(",") if h.strip()]
    if len(hosts) <= 1:
        return connect
    return hosts[i % len(hosts)] + slash + chroot


def new_client(hosts):
    from kazoo.client import KazooClient

    client = KazooClient(hosts=hosts, timeout=30.0)
    client.start(timeout=30)
    return client


def close_client(client):
    try:
        client.stop()
        client.close()
    except Exception:  # noqa: BLE001 - exiting anyway
        pass


# ------------------------------------------------------------------------------------------
# Shared state of one run (created before forking; lives in shared memory)


class Shared:
    def __init__(self, ctx, n):
        self.ready = ctx.Barrier(n + 1)
        self.go = ctx.Event()
        self.start = ctx.Value("d", 0.0, lock=False)
        # critical-section bookkeeping, guarded by cs
        self.cs = ctx.Lock()
        self.holders = ctx.Value("i", 0, lock=False)
        self.readers = ctx.Value("i", 0, lock=False)
        self.writers = ctx.Value("i", 0, lock=False)
        # double barrier rounds, guarded by rounds
        self.rounds = ctx.Lock()
        self.last_round = ctx.Value("i", -1, lock=False)
        self.last_go = ctx.Value("b", 1, lock=False)
        self.aborted = ctx.Value("b", 0, lock=False)
        self.results = ctx.Queue()


class Clock:
    def __init__(self, start, args):
        self.warmup_end = start + args.warmup_seconds
        self.window_end = self.warmup_end + args.seconds


# ------------------------------------------------------------------------------------------
# One client process


def client_main(index, args, run_path, shared):
    # Only the parent writes to stdout.
    os.dup2(2, 1)
    result = {"index": index, "latencies": [], "errors": 0, "violations": 0, "increments": 0,
              "starts": {}, "ends": {}}
    client = None
    try:
        client = new_client(server_for(args.connect, index))
        op = make_op(index, args, run_path, client, shared, result)
        shared.ready.wait(timeout=120)
        shared.go.wait(timeout=120)
        clock = Clock(shared.start.value, args)
        if args.recipe == "double_barrier":
            barrier_rounds(index, args, run_path, client, shared, clock, result)
        else:
            loop(index, op, clock, result)
    except Exception as e:  # noqa: BLE001 - reported to the parent
        log(f"client {index}: {e!r}")
        traceback.print_exc(file=sys.stderr)
        result["fatal"] = repr(e)
        shared.ready.abort()  # the parent stops waiting for the others to connect
    shared.results.put(result)
    if client is not None:
        close_client(client)


def loop(index, op, clock, result):
    latencies = result["latencies"]
    while True:
        s = time.monotonic()
        if s >= clock.window_end:
            return
        try:
            latency = op()
        except Exception as e:  # noqa: BLE001 - a failed operation
            log(f"client {index}: {e!r}")
            latency = None
        e = time.monotonic()
        in_window = clock.warmup_end <= s < clock.window_end
        if latency is None:
            result["errors"] += 1  # warm-up failures count too: a failure is never hidden
            time.sleep(0.01)  # no hot loop on a broken connection
        elif in_window and e <= clock.window_end:
            latencies.append(latency * 1e3)


def make_op(index, args, run_path, client, shared, result):
    path = run_path + "/lock"
    ident = f"client-{index}"

    def guarded(limit):
        with shared.cs:
            shared.holders.value += 1
            if shared.holders.value > limit:
                result["violations"] += 1
        with shared.cs:
            shared.holders.value -= 1

    if args.recipe == "mutex":
        lock = client.Lock(path, ident)

        def op():
            t0 = time.monotonic()
            if not lock.acquire(timeout=OP_TIMEOUT):
                return None
            latency = time.monotonic() - t0
            try:
                guarded(1)
            finally:
                lock.release()
            return latency

        return op

    if args.recipe == "rwlock":
        read_lock = client.ReadLock(path, ident)
        write_lock = client.WriteLock(path, ident)
        rng = random.Random(index)

        def op():
            read = rng.randrange(100) < 75
            lock = read_lock if read else write_lock
            t0 = time.monotonic()
            if not lock.acquire(timeout=OP_TIMEOUT):
                return None
            latency = time.monotonic() - t0
            try:
                with shared.cs:
                    if read:
                        shared.readers.value += 1
                        if shared.writers.value > 0:
                            result["violations"] += 1
                    else:
                        shared.writers.value += 1
                        if shared.writers.value > 1 or shared.readers.value > 0:
                            result["violations"] += 1
                with shared.cs:
                    if read:
                        shared.readers.value -= 1
                    else:
                        shared.writers.value -= 1
            finally:
                lock.release()
            return latency

        return op

    if args.recipe == "semaphore":
        sem = client.Semaphore(run_path + "/semaphore", ident, max_leases=args.leases)

        def op():
            t0 = time.monotonic()
            if not sem.acquire(timeout=OP_TIMEOUT):
                return None
            latency = time.monotonic() - t0
            try:
                guarded(args.leases)
            finally:
                sem.release()
            return latency

        return op

    if args.recipe == "counter":
        counter = client.Counter(run_path + "/counter", default=0)
        _ = counter.value  # creates the node before the clock starts

        def op():
            nonlocal counter
            t0 = time.monotonic()
            counter += 1
            latency = time.monotonic() - t0
            result["increments"] += 1
            return latency

        return op

    if args.recipe == "double_barrier":
        return None

    if args.recipe == "raw":
        node = f"{run_path}/raw-{index}"

        def op():
            t0 = time.monotonic()
            client.create(node, ephemeral=True)
            client.delete(node)
            return time.monotonic() - t0

        return op

    if args.recipe == "raw_set":
        node = f"{run_path}/set-{index}"
        client.ensure_path(run_path)
        version = client.create(node, b"\0" * 8, include_data=True)[1].version

        def op():
            nonlocal version
            t0 = time.monotonic()
            data = (version + 1).to_bytes(8, "big")
            version = client.set(node, data, version=version).version
            return time.monotonic() - t0

        return op

    raise ValueError(f"no loop for {args.recipe}")


def barrier_rounds(index, args, run_path, client, shared, clock, result):
    """Rounds of enter + leave; the first member to reach a round decides whether it runs."""
    n = args.clients
    round_no = 0
    while True:
        with shared.rounds:
            if round_no != shared.last_round.value:
                now = time.monotonic()
                shared.last_round.value = round_no
                go = bool(shared.last_go.value) and not shared.aborted.value and now < clock.window_end
                shared.last_go.value = 1 if go else 0
                if go:
                    result["starts"][round_no] = now
            go = bool(shared.last_go.value)
        if not go:
            return
        barrier = client.DoubleBarrier(f"{run_path}/r{round_no}", n, identifier=f"client-{index}")
        ok = run_with_timeout(lambda: enter_leave(barrier), BARRIER_TIMEOUT)
        result["ends"][round_no] = time.monotonic() if ok else -1.0
        if not ok:
            log(f"client {index}: round {round_no} failed or timed out")
            with shared.rounds:
                shared.aborted.value = 1
            return
        round_no += 1


def enter_leave(barrier):
    barrier.enter()  # kazoo swallows failures here and leaves participating False
    if not barrier.participating:
        return False
    barrier.leave()
    return True


def run_with_timeout(fn, timeout):
    box = {}

    def target():
        try:
            box["ok"] = bool(fn())
        except Exception as e:  # noqa: BLE001 - a failed operation
            log(repr(e))
            box["ok"] = False

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    return box.get("ok", False) if not t.is_alive() else False


# ------------------------------------------------------------------------------------------
# The parent: start the clients, the clock, collect


def run_processes(args, run_path):
    ctx = mp.get_context("fork")
    n = args.clients
    shared = Shared(ctx, n)
    procs = [ctx.Process(target=client_main, args=(i, args, run_path, shared), daemon=True) for i in range(n)]
    for p in procs:
        p.start()
    # The parent's own client only after forking: kazoo's threads must not be forked.
    admin = None
    try:
        admin = new_client(args.connect)
        admin.ensure_path(run_path)
        try:
            shared.ready.wait(timeout=120)
        except threading.BrokenBarrierError:
            raise RuntimeError("the clients did not all connect") from None
        initial = read_counter(admin, run_path) if args.recipe == "counter" else 0
        shared.start.value = time.monotonic() + 0.05
        shared.go.set()

        deadline = time.monotonic() + 0.05 + args.warmup_seconds + args.seconds + OP_TIMEOUT + 30
        results = []
        while len(results) < n and time.monotonic() < deadline:
            try:
                results.append(shared.results.get(timeout=max(0.1, deadline - time.monotonic())))
            except Exception:  # noqa: BLE001 - queue.Empty: deadline passed
                break
        missing = n - len(results)
        if missing:
            log(f"{missing} client process(es) did not report in time")
        fatal = [r["fatal"] for r in results if "fatal" in r]
        if fatal:
            raise RuntimeError(f"client failed: {fatal[0]}")

        clock = Clock(shared.start.value, args)
        errors = missing + sum(r["errors"] for r in results)
        violations = sum(r["violations"] for r in results)
        if args.recipe == "double_barrier":
            latencies, round_errors = barrier_latencies(results, n, clock)
            errors += round_errors
            spread = None
        else:
            latencies = [x for r in results for x in r["latencies"]]
            # the fewest and the most operations one client counted (a missing one counted none)
            counts = [len(r["latencies"]) for r in results] + [0] * missing
            spread = {"worker_ops_min": min(counts), "worker_ops_max": max(counts)} if len(counts) > 1 else None
        if args.recipe == "counter":
            final = read_counter(admin, run_path)
            increments = sum(r["increments"] for r in results)
            if final - initial != increments or missing:
                log(f"counter moved by {final - initial}, successful increments {increments}")
                violations += 1
        return result_line(args, latencies, errors, violations, args.seconds, spread)
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        if admin is not None:
            cleanup(admin, run_path)
            close_client(admin)


def read_counter(client, run_path):
    from kazoo.exceptions import NoNodeError

    try:
        data, _ = client.get(run_path + "/counter")
    except NoNodeError:
        return 0
    return int(data.decode("ascii")) if data else 0


def barrier_latencies(results, n, clock):
    starts = {}
    for r in results:
        starts.update(r["starts"])
    latencies, errors = [], 0
    for round_no, start in starts.items():
        ends = [r["ends"].get(round_no) for r in results]
        failed = len(ends) < n or any(e is None or e < 0 for e in ends)
        in_window = clock.warmup_end <= start < clock.window_end
        if failed:
            errors += 1  # in the warm-up too
        elif in_window and max(ends) <= clock.window_end:
            latencies.append((max(ends) - start) * 1e3)
    return latencies, errors


def cleanup(client, run_path):
    try:
        client.delete(run_path, recursive=True)
    except Exception as e:  # noqa: BLE001 - best effort
        log(f"cleanup of {run_path} failed: {e!r}")


# ------------------------------------------------------------------------------------------
# Drain: W waiter threads queued on one lock behind a holder, timed until all held it once


def run_drain(args, run_path):
    w = args.waiters
    clients = [new_client(server_for(args.connect, i)) for i in range(args.clients)]
    path = run_path + "/lock"
    try:
        clients[0].ensure_path(path)
        holder = clients[0].Lock(path, "holder")
        if not holder.acquire(timeout=OP_TIMEOUT):
            raise RuntimeError("the holder could not take the empty lock")
        held = [0.0] * w
        released = [0.0] * w
        failures = [0]
        cs = threading.Lock()
        inside = [0]
        violations = [0]

        def waiter(i):
            lock = clients[i % len(clients)].Lock(path, f"waiter-{i}")
            try:
                if not lock.acquire(timeout=OP_TIMEOUT * 2):
                    with cs:
                        failures[0] += 1
                    return
                held[i] = time.monotonic()
                with cs:
                    inside[0] += 1
                    if inside[0] > 1:
                        violations[0] += 1
                    inside[0] -= 1
                lock.release()
                released[i] = time.monotonic()
            except Exception as e:  # noqa: BLE001 - a failed waiter
                log(f"waiter {i}: {e!r}")
                with cs:
                    failures[0] += 1

        threading.stack_size(256 * 1024)
        threads = [threading.Thread(target=waiter, args=(i,), daemon=True) for i in range(w)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 300
        while True:  # untimed: wait until every waiter has its node in the queue
            queued = len(clients[0].get_children(path))
            if queued >= w + 1:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {queued - 1} of {w} waiters queued")
            time.sleep(0.02)
        log(f"{w} waiters queued; releasing")
        t0 = time.monotonic()
        holder.release()
        end = time.monotonic() + OP_TIMEOUT * 2 + 30
        for t in threads:
            t.join(max(0.0, end - time.monotonic()))
        stuck = sum(1 for t in threads if t.is_alive())
        last = max([r for r in released if r] or [t0])
        waits = [(h - t0) * 1e3 for h, r in zip(held, released) if r]
        total_ms = (last - t0) * 1e3
        extra = {"waiters": w, "total_ms": round(total_ms, 3), "per_handoff_ms": round(total_ms / w, 4)}
        return result_line(args, waits, failures[0] + stuck, violations[0], total_ms / 1e3, extra)
    finally:
        cleanup(clients[0], run_path)
        for c in clients:
            close_client(c)


# ------------------------------------------------------------------------------------------
# entity: a lock per entity, T threads on one session, each entity's stock decremented under its lock


def zipf_cdf(n):
    """Cumulative weights of ranks 0..n-1, rank k weighing 1/(k+1) (Zipf, exponent 1)."""
    cdf, total = [], 0.0
    for k in range(n):
        total += 1.0 / (k + 1)
        cdf.append(total)
    return cdf


def pick_entity(rng, n, cdf):
    if cdf is None:
        return rng.randrange(n)
    return min(bisect.bisect_left(cdf, rng.random() * cdf[-1]), n - 1)


def parse_stock(path, data):
    try:
        return int(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise RuntimeError(f"{path} holds {data!r}, not a number") from None


def wait_all(asyncs):
    """The results of kazoo async requests (a list of (value, exception))."""
    out = []
    for a in asyncs:
        try:
            out.append((a.get(timeout=OP_TIMEOUT), None))
        except Exception as e:  # noqa: BLE001 - the caller decides
            out.append((None, e))
    return out


def run_entity(args, run_path):
    from kazoo.exceptions import BadVersionError

    t, n = args.tasks, args.paths
    stock_dir, lock_dir = run_path + "/stock", run_path + "/lock"
    client = new_client(args.connect)
    try:
        client.ensure_path(stock_dir)
        stock = str(STOCK).encode("ascii")
        for _, e in wait_all([client.create_async(f"{stock_dir}/{k}", stock) for k in range(n)]):
            if e is not None:
                raise RuntimeError(f"creating the stock nodes: {e!r}")
        # each entity's lock directory exists, as in a service that has run a while: the window
        # measures locking, not each directory's first creation (kazoo's Lock makes it persistent)
        client.ensure_path(lock_dir)
        for _, e in wait_all([client.create_async(f"{lock_dir}/{k}") for k in range(n)]):
            if e is not None:
                raise RuntimeError(f"creating the lock directories: {e!r}")
        cdf = zipf_cdf(n) if args.skew == "zipf" else None
        decrements = [0] * n  # guarded by `counted`
        counted = threading.Lock()
        results = [{"index": i, "latencies": [], "errors": 0, "violations": 0} for i in range(t)]

        def make_op(i):
            rng = random.Random(i)
            result = results[i]

            def op():
                k = pick_entity(rng, n, cdf)
                lock = client.Lock(f"{lock_dir}/{k}", f"task-{i}")
                t0 = time.monotonic()
                if not lock.acquire(timeout=OP_TIMEOUT):
                    return None
                latency = time.monotonic() - t0
                try:
                    path = f"{stock_dir}/{k}"
                    data, stat = client.get(path)
                    left = parse_stock(path, data)
                    try:
                        client.set(path, str(left - 1).encode("ascii"), version=stat.version)
                        with counted:
                            decrements[k] += 1
                    except BadVersionError:
                        log(f"entity {k}: a versioned write under the lock was refused (another writer)")
                        result["violations"] += 1
                finally:
                    lock.release()
                return latency

            return op

        go = threading.Event()
        start = [0.0]

        def task(i, op):
            go.wait()
            loop(i, op, Clock(start[0], args), results[i])

        threading.stack_size(512 * 1024)
        threads = [threading.Thread(target=task, args=(i, make_op(i)), daemon=True) for i in range(t)]
        for th in threads:
            th.start()
        start[0] = time.monotonic() + 0.05
        go.set()
        clock = Clock(start[0], args)
        deadline = clock.window_end + OP_TIMEOUT + 30
        for th in threads:
            th.join(max(0.0, deadline - time.monotonic()))
        stuck = sum(1 for th in threads if th.is_alive())
        if stuck:
            log(f"{stuck} thread(s) did not finish in time")

        errors = stuck + sum(r["errors"] for r in results)
        violations = sum(r["violations"] for r in results)
        finals = wait_all([client.get_async(f"{stock_dir}/{k}") for k in range(n)])
        with counted:
            sold = list(decrements)
        for k, (value, e) in enumerate(finals):
            if e is not None:
                raise RuntimeError(f"reading {stock_dir}/{k}: {e!r}")
            left = parse_stock(f"{stock_dir}/{k}", value[0])
            if STOCK - left != sold[k]:
                log(f"entity {k}: stock {left}, but {sold[k]} sold of {STOCK}")
                violations += 1
        latencies = [x for r in results for x in r["latencies"]]
        counts = [len(r["latencies"]) for r in results]
        extra = {"tasks": t, "paths": n}
        if len(counts) > 1:
            extra.update({"worker_ops_min": min(counts), "worker_ops_max": max(counts)})
        return result_line(args, latencies, errors, violations, args.seconds, extra)
    finally:
        cleanup_entities(client, run_path, n)
        cleanup(client, run_path)
        close_client(client)


def cleanup_entities(client, run_path, n):
    """Deletes the stock nodes and the lock directories, pipelined (best effort, bounded)."""
    from kazoo.exceptions import NoNodeError, NotEmptyError

    deadline = time.monotonic() + CLEANUP_TIMEOUT
    paths = [f"{run_path}/{d}/{k}" for k in range(n) for d in ("stock", "lock")]
    try:
        asyncs = [client.delete_async(p) for p in paths]
        for p, a in zip(paths, asyncs):
            try:
                a.get(timeout=max(0.1, deadline - time.monotonic()))
            except NoNodeError:
                pass
            except NotEmptyError:  # a lock node left behind (a failed run)
                client.delete(p, recursive=True)
    except Exception as e:  # noqa: BLE001 - best effort; cleanup() removes what is left
        log(f"cleanup of the entities under {run_path} failed: {e!r}")


def main(argv):
    try:
        args = parse_args(argv)
    except UsageError as e:
        log(str(e))
        log("usage: --connect HOSTS --recipe R --clients N --seconds D [--warmup-seconds W]"
            " [--base PATH] [--leases K] [--waiters W] [--tasks T] [--paths P] [--skew uniform|zipf]")
        return 64
    if args.recipe in UNSUPPORTED:
        log(f"recipe {args.recipe} is not supported: {UNSUPPORTED[args.recipe]}")
        return 2
    if args.recipe not in SUPPORTED:
        log(f"unknown recipe {args.recipe} (supported: {', '.join(SUPPORTED)})")
        return 2
    if args.tasks > 1 and args.recipe != "entity":
        log(f"--tasks applies to entity, not to {args.recipe} (one process per client)")
        return 2
    # A TERM (compare.sh's timeout) unwinds through the finally blocks that kill the clients.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    real_stdout = os.fdopen(os.dup(1), "w")
    sys.stdout = sys.stderr
    run_path = f"{args.base if args.base != '/' else ''}/{args.recipe}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    log(f"{args.recipe}, {args.clients} clients, {args.seconds} s (+{args.warmup_seconds} s warm-up) on {run_path}")
    try:
        if args.recipe == "drain":
            line = run_drain(args, run_path)
        elif args.recipe == "entity":
            line = run_entity(args, run_path)
        else:
            line = run_processes(args, run_path)
    except Exception as e:  # noqa: BLE001 - the run could not be carried out
        log(f"run failed: {e!r}")
        traceback.print_exc(file=sys.stderr)
        return 1
    real_stdout.write(line + "\n")
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
