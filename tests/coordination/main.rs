//! Coordination recipes against real ZooKeeper, one test binary (one shared server, each test
//! under its own path; tests that kill, restart or partition a server start their own):
//! barriers ([`barriers`]), leader election ([`leader`]), atomic counters ([`atomic`], their
//! combined updates in [`atomic_combined`], across sessions in [`atomic_joint`]) and SharedCount / SharedValue ([`shared_count`]).

mod atomic;
mod atomic_combined;
mod atomic_joint;
mod barriers;
mod leader;
mod shared_count;
