//! Hostile and corrupt trees: every recipe family beside foreign children and random data
//! that other programs, older clients or humans with `zkCli` left under its path (wrong names,
//! sequence-like names with huge or negative numbers, names without a sequence, odd unicode,
//! non-UTF-8, empty and 1 MB data, invalid JSON, lying queue framing, counters of the wrong
//! width, nodes deleted and re-created mid-operation), on one real server shared by the binary
//! (each test under its own path).
//!
//! Each family's test is seeded (the seed printed; `HOSTILE_SEED` replays one) and bounded,
//! and checks: no panic, exclusion / counts / exactly-once for the real participants, liveness
//! (they finish within [`BOUND`]), and every foreign node either ignored by the recipe's rule
//! (docs/RELIABILITY.md, "Hostile trees") or reported as a typed error.

mod barriers;
mod caches;
mod counters;
mod discovery;
mod latch;
mod leader;
mod locks;
mod nodes;
mod queues;
mod support;
