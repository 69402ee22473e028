//! The library's metrics (feature `metrics`) against a real server: through a recording
//! recorder (every value kept, counts compared exactly with what the test did), and through the
//! `metrics` example's Prometheus endpoint, scraped over HTTP from child processes.

mod recorded;
mod recorder;
mod scrape;
