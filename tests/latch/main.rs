//! Count-down latches and expirable semaphore permits against real ZooKeeper, one test binary
//! (one shared server, each test under its own path; tests that cut connections, expire
//! sessions or need TTL nodes start their own server): the latch ([`latch`], its faults in
//! [`latch_faults`]) and permits that expire ([`permits`]).

mod latch;
mod latch_faults;
mod permits;
