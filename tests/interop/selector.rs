//! A Curator 5.4 `LeaderSelector` (in the peer) and ours on one path: one leader at any time,
//! and leadership handed over both ways (Curator's leader relinquishes → ours leads; ours
//! relinquishes → Curator's leads), both sides agreeing on who leads.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use zk_recipes::leader::LeadershipEnd;
use zk_recipes::LeaderSelector;
use zk_recipes_testing::fixtures::{self, eventually};

use crate::cmd;

const WAIT: Duration = Duration::from_secs(20);

/// Clears the flag when the leadership task ends, returned or cancelled.
struct Leading(Arc<AtomicBool>);

impl Drop for Leading {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_our_selectors_hand_leadership_over_both_ways() {
    let cs = fixtures::shared_server().await;
    fixtures::within(Duration::from_secs(90), async {
        let peer = crate::peer().await;
        let path = format!("/{}/selector", fixtures::unique("interop-selector"));
        let cid = fixtures::unique("selector-java");
        peer.connect(&cid, &cs).await.unwrap();
        cmd(&peer, &["selector.start", &cid, "j", &path, "java-1"]).await;
        assert_eq!(cmd(&peer, &["selector.await", &cid, "j", "10000"]).await, "true", "Curator leads first");

        let fw = fixtures::framework(&cs).await;
        let (ours_leading, terms, relinquish) =
            (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)), Arc::new(Notify::new()));
        let ours = LeaderSelector::new(&fw, &path, "rust-1", {
            let (ours_leading, terms, relinquish) = (ours_leading.clone(), terms.clone(), relinquish.clone());
            move |_ctx| {
                let (flag, terms, relinquish) = (ours_leading.clone(), terms.clone(), relinquish.clone());
                async move {
                    flag.store(true, Ordering::SeqCst);
                    let _leading = Leading(flag);
                    terms.fetch_add(1, Ordering::SeqCst);
                    relinquish.notified().await;
                }
            }
        })
        .unwrap();
        let mut ends = ours.leadership_ends();
        ours.start().await.unwrap();

        // a sampler: ours, Curator's, ours again; both leading with ours leading throughout
        // (or Curator's throughout, ours in between) is an overlap
        let stop = Arc::new(AtomicBool::new(false));
        let sampler = tokio::spawn({
            let (peer, cid, ours_leading, stop) = (peer.clone(), cid.clone(), ours_leading.clone(), stop.clone());
            async move {
                let (mut samples, mut both) = (0usize, Vec::new());
                let java = || async { cmd(&peer, &["selector.has", &cid, "j"]).await == "true" };
                while !stop.load(Ordering::SeqCst) {
                    let o1 = ours_leading.load(Ordering::SeqCst);
                    let j1 = java().await;
                    let o2 = ours_leading.load(Ordering::SeqCst);
                    let j2 = java().await;
                    if j1 && o2 && (o1 || j2) {
                        both.push(samples);
                    }
                    samples += 1;
                }
                (samples, both)
            }
        });

        // 1. Curator leads, ours is queued behind it and agrees on who leads
        eventually(WAIT, "ours queued", || async { ours.participants().await.unwrap().len() == 2 }).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!ours.has_leadership() && !ours_leading.load(Ordering::SeqCst), "ours waits while Curator leads");
        assert_eq!(ours.leader().await.unwrap().unwrap().id, "java-1");
        assert_eq!(cmd(&peer, &["selector.leader", &cid, "j"]).await, "java-1");
        let ids: Vec<String> = ours.participants().await.unwrap().into_iter().map(|p| p.id).collect();
        assert_eq!(ids, ["java-1", "rust-1"], "ours reads Curator's id from its node");

        // 2. Curator's leader relinquishes: ours leads; Curator, queued again, agrees
        cmd(&peer, &["selector.relinquish", &cid, "j"]).await;
        eventually(WAIT, "ours leads after Curator relinquished", || async { ours_leading.load(Ordering::SeqCst) })
            .await;
        assert!(ours.has_leadership());
        assert_eq!(cmd(&peer, &["selector.requeue", &cid, "j"]).await, "true");
        eventually(WAIT, "Curator queued again", || async { ours.participants().await.unwrap().len() == 2 }).await;
        assert_eq!(cmd(&peer, &["selector.leader", &cid, "j"]).await, "rust-1", "Curator reads our id");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(cmd(&peer, &["selector.has", &cid, "j"]).await, "false", "Curator waits while ours leads");

        // 3. ours relinquishes: Curator's leads again
        relinquish.notify_one();
        assert_eq!(cmd(&peer, &["selector.await", &cid, "j", "10000"]).await, "true", "Curator leads after ours");
        assert!(!ours_leading.load(Ordering::SeqCst) && !ours.has_leadership());
        ends.wait_for(|end| end.is_some()).await.unwrap();
        assert_eq!(*ends.borrow(), Some(LeadershipEnd::Finished));
        assert_eq!(ours.leader().await.unwrap().unwrap().id, "java-1");
        assert_eq!(cmd(&peer, &["selector.terms", &cid, "j"]).await, "2");
        assert_eq!(terms.load(Ordering::SeqCst), 1);

        stop.store(true, Ordering::SeqCst);
        let (samples, both) = sampler.await.unwrap();
        println!("leader selector: {samples} samples of both sides, overlaps at {both:?}");
        assert!(both.is_empty(), "both led at once (samples {both:?} of {samples})");
        assert!(samples > 10, "the sampler ran ({samples})");

        ours.close().await.unwrap();
        cmd(&peer, &["selector.close", &cid, "j"]).await;
        peer.close(&cid).await.unwrap();
        eventually(WAIT, "no contender left", || async { fw.children(&path).await.map_or(true, |c| c.is_empty()) })
            .await;
    })
    .await;
}
