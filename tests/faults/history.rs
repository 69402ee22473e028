//! Histories of the random-fault soak, checked for linearizability by `stateright`'s
//! `LinearizabilityTester` (a checker kept with a model checker, not one of ours).
//!
//! History clients of their own (straight to the ensemble, so server kills and pauses hit
//! them) invoke operations on three kinds of objects and record each invocation and each
//! completion in real-time order: atomic-counter increments (with the value they return, or
//! "outcome unknown"), mutex holds (acquire with the fencing token granted, release, or a loss
//! observed) and compare-and-set writes of a shared count (by data version). An operation whose
//! outcome is unknown stays *in flight* for ever: the checker may place it anywhere after its
//! invocation, or nowhere; its client goes on as a new thread. Plain reads are not recorded:
//! ZooKeeper serves them from the server a client is connected to, which may lag (sequential,
//! not linearizable, consistency).
//!
//! Objects change every [`EPOCH`] (a new path), so each history stays small enough for the
//! checker's search; linearizability is local, so checking each object alone is checking all.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};
use zk_recipes::counter::VersionedValue;
use zk_recipes::{DistributedAtomicLong, Error, Framework, InterProcessMutex, SharedCount};
use zk_recipes_testing::{fixtures, TestingCluster};

use super::workload::SESSION_TIMEOUT;

/// How long one object is used before the clients move to the next.
pub const EPOCH: Duration = Duration::from_secs(2);
/// Clients per kind of object.
const CLIENTS: u64 = 2;
/// The pause between two operations of a client.
const PACE: Duration = Duration::from_millis(10);

/// An operation on an object.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Increment,
    Acquire,
    Release(i64),
    Cas { expected_version: i32, new: i32 },
}

/// What an operation returned.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ret {
    /// An increment's new value.
    Value(i64),
    /// Not applied (an increment out of tries, a failed acquire, a refused call).
    NotApplied,
    /// The mutex, with this fencing token.
    Granted(i64),
    Released,
    /// A compare-and-set written, the node now at this version.
    Written(i32),
    /// A compare-and-set refused: the version had moved on.
    Refused,
}

/// The sequential specification of the three kinds of objects.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Model {
    Counter(i64),
    Mutex { holder: Option<i64>, last: i64 },
    Register { value: i32, version: i32 },
}

impl SequentialSpec for Model {
    type Op = Op;
    type Ret = Ret;

    /// What an operation left in flight did, were it applied here.
    fn invoke(&mut self, op: &Op) -> Ret {
        match (self, op) {
            (Model::Counter(v), Op::Increment) => {
                *v += 1;
                Ret::Value(*v)
            }
            (Model::Mutex { holder, .. }, Op::Release(t)) => {
                if *holder == Some(*t) {
                    *holder = None;
                }
                Ret::Released
            }
            (Model::Register { value, version }, Op::Cas { expected_version, new }) if version == expected_version => {
                *value = *new;
                *version += 1;
                Ret::Written(*version)
            }
            _ => Ret::NotApplied,
        }
    }

    fn is_valid_step(&mut self, op: &Op, ret: &Ret) -> bool {
        match (self, op, ret) {
            (_, _, Ret::NotApplied) => true,
            (Model::Counter(v), Op::Increment, Ret::Value(n)) if *n == *v + 1 => {
                *v = *n;
                true
            }
            (Model::Mutex { holder: holder @ None, last }, Op::Acquire, Ret::Granted(t)) if t > last => {
                *holder = Some(*t);
                *last = *t;
                true
            }
            (Model::Mutex { holder, .. }, Op::Release(t), Ret::Released) if *holder == Some(*t) => {
                *holder = None;
                true
            }
            (Model::Register { value, version }, Op::Cas { expected_version, new }, Ret::Written(v))
                if version == expected_version && *v == *version + 1 =>
            {
                *value = *new;
                *version = *v;
                true
            }
            (Model::Register { version, .. }, Op::Cas { expected_version, .. }, Ret::Refused) => {
                version != expected_version
            }
            _ => false,
        }
    }
}

#[derive(Clone, Debug)]
enum Event {
    Invoke(u64, Op),
    Return(u64, Ret),
}

/// The recorded events, per object, in real-time order.
#[derive(Debug, Default)]
pub struct Recorder {
    events: Mutex<BTreeMap<String, Vec<Event>>>,
}

impl Recorder {
    fn invoke(&self, object: &str, thread: u64, op: Op) {
        self.events.lock().unwrap().entry(object.to_string()).or_default().push(Event::Invoke(thread, op));
    }

    fn ret(&self, object: &str, thread: u64, ret: Ret) {
        self.events.lock().unwrap().entry(object.to_string()).or_default().push(Event::Return(thread, ret));
    }

    /// Checks every object's history; returns (objects, operations) checked, or the first
    /// history that is not linearizable, written to a file named after `seed`.
    pub fn check(&self, seed: u64) -> Result<(usize, usize), String> {
        let events = self.events.lock().unwrap().clone();
        let mut ops = 0;
        for (object, history) in &events {
            let init = if object.contains("/counter-") {
                Model::Counter(0)
            } else if object.contains("/mutex-") {
                Model::Mutex { holder: None, last: i64::MIN }
            } else {
                Model::Register { value: 0, version: 0 }
            };
            let mut tester = LinearizabilityTester::new(init);
            for event in history {
                let fed = match event.clone() {
                    Event::Invoke(t, op) => tester.on_invoke(t, op).map(|_| ()),
                    Event::Return(t, ret) => tester.on_return(t, ret).map(|_| ()),
                };
                fed.map_err(|e| format!("{object}: a malformed history: {e}"))?;
            }
            ops += history.iter().filter(|e| matches!(e, Event::Invoke(..))).count();
            if !tester.is_consistent() {
                let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("histories");
                let _ = std::fs::create_dir_all(&dir);
                let file = dir.join(format!("seed-{seed}-{}.txt", object.trim_start_matches('/').replace('/', "_")));
                let text: String = history.iter().map(|e| format!("{e:?}\n")).collect();
                let _ = std::fs::write(&file, text);
                return Err(format!("{object}: not linearizable (seed {seed}); history in {}", file.display()));
            }
        }
        Ok((events.len(), ops))
    }
}

/// The history clients: `CLIENTS` per kind, each with its own session.
pub struct Histories {
    pub recorder: Arc<Recorder>,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    frameworks: Vec<Framework>,
}

impl Histories {
    pub async fn start(cluster: &TestingCluster, base: &str) -> Histories {
        let recorder = Arc::new(Recorder::default());
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let mut h = Histories { recorder, stop, tasks: Vec::new(), frameworks: Vec::new() };
        for kind in 0..3u64 {
            for n in 0..CLIENTS {
                let fw =
                    fixtures::framework_with(cluster.connect_string(), |b| b.session_timeout(SESSION_TIMEOUT)).await;
                let client = Client {
                    fw: fw.clone(),
                    base: base.to_string(),
                    recorder: h.recorder.clone(),
                    stop: h.stop.clone(),
                    started,
                    thread: (kind * CLIENTS + n) << 32,
                };
                h.frameworks.push(fw);
                h.tasks.push(tokio::spawn(match kind {
                    0 => futures_boxed(client.counter()),
                    1 => futures_boxed(client.mutex()),
                    _ => futures_boxed(client.register()),
                }));
            }
        }
        h
    }

    /// Stops the clients (none may be stuck) and checks the histories.
    ///
    /// # Panics
    /// If a client is stuck or a history is not linearizable.
    pub async fn finish(mut self, seed: u64) -> String {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.tasks.drain(..) {
            fixtures::within(Duration::from_secs(30), t).await.unwrap();
        }
        for fw in &self.frameworks {
            fw.close();
        }
        let recorder = self.recorder.clone();
        let checked = Instant::now();
        // the checker's search recurses once per operation: a thread with a large stack
        let result = std::thread::Builder::new()
            .stack_size(512 << 20)
            .spawn(move || recorder.check(seed))
            .unwrap()
            .join()
            .unwrap();
        let (objects, ops) = result.unwrap_or_else(|e| panic!("{e}"));
        format!(
            "Linearizability (stateright's `LinearizabilityTester`): {ops} operations on {objects} objects (counters, mutexes, compare-and-set registers; a new object every {} s) by {} history clients, all linearizable; checked in {:.1} s.",
            EPOCH.as_secs(),
            3 * CLIENTS,
            checked.elapsed().as_secs_f64()
        )
    }
}

fn futures_boxed(
    f: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(f)
}

/// One history client.
struct Client {
    fw: Framework,
    base: String,
    recorder: Arc<Recorder>,
    stop: Arc<AtomicBool>,
    started: Instant,
    /// This client's thread id in the history; a new one after an operation left in flight.
    thread: u64,
}

impl Client {
    fn object(&self, kind: &str) -> String {
        let epoch = self.started.elapsed().as_millis() / EPOCH.as_millis();
        format!("{}/{kind}-{epoch}", self.base)
    }

    fn running(&self) -> bool {
        !self.stop.load(Ordering::SeqCst)
    }

    fn invoke(&self, object: &str, op: Op) {
        self.recorder.invoke(object, self.thread, op);
    }

    fn ret(&self, object: &str, ret: Ret) {
        self.recorder.ret(object, self.thread, ret);
    }

    /// Leaves the operation in flight: this client goes on as a new thread.
    fn unknown(&mut self) {
        self.thread += 1;
    }

    async fn counter(mut self) {
        while self.running() {
            let object = self.object("counter");
            let counter = DistributedAtomicLong::new(&self.fw, &object).unwrap();
            self.invoke(&object, Op::Increment);
            match counter.increment().await {
                Ok(r) => self.ret(&object, Ret::Value(r.post_value)),
                // the tries ran out: not applied
                Err(Error::Contended { .. }) => self.ret(&object, Ret::NotApplied),
                Err(Error::OutcomeUnknown { .. }) => self.unknown(),
                Err(_) => {
                    self.ret(&object, Ret::NotApplied);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            tokio::time::sleep(PACE).await;
        }
    }

    async fn mutex(mut self) {
        while self.running() {
            let object = self.object("mutex");
            let mutex = InterProcessMutex::new(&self.fw, &object).unwrap();
            self.invoke(&object, Op::Acquire);
            let guard = match mutex.acquire_timeout(Duration::from_secs(1)).await {
                Ok(guard) => guard,
                Err(_) => {
                    self.ret(&object, Ret::NotApplied);
                    tokio::time::sleep(PACE).await;
                    continue;
                }
            };
            let token = guard.fencing_token();
            self.ret(&object, Ret::Granted(token));
            // hold 20 ms; a loss is recorded the moment it is seen, before our node can go
            let lost = tokio::select! {
                _ = guard.lost() => true,
                _ = tokio::time::sleep(Duration::from_millis(20)) => false,
            };
            self.invoke(&object, Op::Release(token));
            if lost {
                // released by the server or by our background delete, some time from now
                self.unknown();
                let _ = guard.release().await;
            } else {
                match guard.release().await {
                    Ok(()) => self.ret(&object, Ret::Released),
                    Err(_) => self.unknown(),
                }
            }
            tokio::time::sleep(PACE).await;
        }
    }

    async fn register(mut self) {
        while self.running() {
            let object = self.object("register");
            let count = SharedCount::new(&self.fw, &object, 0).unwrap();
            let read = match count.start().await {
                Ok(()) => count.get().await,
                Err(e) => Err(e),
            };
            let Ok(VersionedValue { version, value }) = read else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let new = value.wrapping_add(1 + (self.thread >> 32) as i32);
            self.invoke(&object, Op::Cas { expected_version: version, new });
            match count.compare_and_set(&VersionedValue { version, value }, new).await {
                Ok(Ok(now)) => self.ret(&object, Ret::Written(now.version)),
                Ok(Err(_)) => self.ret(&object, Ret::Refused),
                Err(Error::OutcomeUnknown { .. }) => self.unknown(),
                Err(_) => self.ret(&object, Ret::NotApplied),
            }
            tokio::time::sleep(PACE).await;
        }
    }
}

/// The checker fails what it must: a mutex granted twice, a counter value returned twice, a
/// compare-and-set written against a version that had moved on (each a history that is not
/// linearizable), and passes an increment left in flight.
#[test]
fn the_checker_rejects_histories_that_are_not_linearizable() {
    let bad: [(&str, Vec<Event>); 3] = [
        (
            "/h/mutex-0",
            vec![
                Event::Invoke(1, Op::Acquire),
                Event::Return(1, Ret::Granted(10)),
                Event::Invoke(2, Op::Acquire),
                Event::Return(2, Ret::Granted(11)),
            ],
        ),
        (
            "/h/counter-0",
            vec![
                Event::Invoke(1, Op::Increment),
                Event::Return(1, Ret::Value(1)),
                Event::Invoke(2, Op::Increment),
                Event::Return(2, Ret::Value(1)),
            ],
        ),
        (
            "/h/register-0",
            vec![
                Event::Invoke(1, Op::Cas { expected_version: 0, new: 5 }),
                Event::Return(1, Ret::Written(1)),
                Event::Invoke(2, Op::Cas { expected_version: 0, new: 6 }),
                Event::Return(2, Ret::Written(1)),
            ],
        ),
    ];
    for (object, history) in bad {
        let recorder = Recorder::default();
        recorder.events.lock().unwrap().insert(object.to_string(), history);
        let verdict = recorder.check(0);
        assert!(verdict.as_ref().is_err_and(|e| e.contains("not linearizable")), "{object}: {verdict:?}");
    }
    // an increment whose outcome is unknown may or may not have been applied
    let recorder = Recorder::default();
    recorder.events.lock().unwrap().insert(
        "/h/counter-1".to_string(),
        vec![
            Event::Invoke(1, Op::Increment),
            Event::Invoke(2, Op::Increment),
            Event::Return(2, Ret::Value(2)),
            Event::Invoke(3, Op::Increment),
            Event::Return(3, Ret::Value(3)),
        ],
    );
    assert_eq!(recorder.check(0), Ok((1, 3)));
}
