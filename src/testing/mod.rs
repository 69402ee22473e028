//! Real-ZooKeeper testing kit.
pub mod curator;
