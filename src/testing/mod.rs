//! Real-ZooKeeper testing kit.
