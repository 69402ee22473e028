//! The event stream of one subscriber: a bounded queue that the cache's task never waits on.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures_core::Stream;
use tokio::sync::Notify;

use super::node::CacheEvent;
use crate::sync::lock;

/// One subscriber's queue. The cache's task pushes; the subscriber's stream pops.
#[derive(Debug)]
pub(crate) struct Subscriber {
    queue: Mutex<Queue>,
    wake: Notify,
    capacity: usize,
    /// The cache's root path, for the log line of a slow subscriber.
    root: String,
}

#[derive(Debug, Default)]
struct Queue {
    events: VecDeque<CacheEvent>,
    closed: bool,
}

impl Subscriber {
    pub fn new(capacity: usize, root: &str) -> Arc<Self> {
        Arc::new(Self {
            queue: Mutex::default(),
            wake: Notify::new(),
            capacity: capacity.max(1),
            root: root.to_string(),
        })
    }

    /// Queues `event`. A full queue is emptied and replaced by one `Resynced` counting every
    /// event dropped (this one included): the task never blocks on a slow subscriber.
    pub fn push(&self, event: CacheEvent) {
        let mut queue = lock(&self.queue);
        if queue.events.len() >= self.capacity {
            let dropped = queue
                .events
                .drain(..)
                .map(|e| match e {
                    CacheEvent::Resynced { dropped } if dropped > 0 => dropped,
                    _ => 1,
                })
                .sum::<u64>()
                + 1;
            tracing::warn!(dropped, path = %self.root, "cache subscriber too slow: events dropped, Resynced sent in their place");
            queue.events.push_back(CacheEvent::Resynced { dropped });
        } else {
            queue.events.push_back(event);
        }
        drop(queue);
        self.wake.notify_one();
    }

    /// Ends the stream once the queued events are taken.
    pub fn close(&self) {
        lock(&self.queue).closed = true;
        self.wake.notify_one();
    }

    /// The events: `replay` first, then what is pushed, until closed.
    pub fn stream(self: Arc<Self>, replay: Vec<CacheEvent>) -> impl Stream<Item = CacheEvent> + Send + 'static {
        async_stream::stream! {
            for event in replay {
                yield event;
            }
            loop {
                let next = {
                    let mut queue = lock(&self.queue);
                    match queue.events.pop_front() {
                        Some(event) => Ok(event),
                        None => Err(queue.closed),
                    }
                };
                match next {
                    Ok(event) => yield event,
                    Err(true) => return,
                    Err(false) => self.wake.notified().await,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    #[tokio::test]
    async fn overflow_is_announced_not_silent() {
        let sub = Subscriber::new(2, "/r");
        sub.push(CacheEvent::Initialized);
        sub.push(CacheEvent::Initialized);
        sub.push(CacheEvent::Initialized); // overflows: 3 dropped
        sub.push(CacheEvent::Initialized);
        sub.push(CacheEvent::Initialized); // overflows again: 3 + 1 + 1
        sub.close();
        let got: Vec<_> = sub.stream(vec![]).collect().await;
        assert_eq!(got, vec![CacheEvent::Resynced { dropped: 5 }]);
    }
}
