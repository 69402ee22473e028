//! Registrations (group members, persistent nodes) in a hostile tree. Rules: every child of a
//! group is a member — ids and data are free-form, so junk children are members with whatever
//! data they hold (odd names, non-UTF-8, empty, 1 MB); a member whose node someone deletes
//! creates it again; a member whose id another session holds gets
//! [`Error::NodeHeldByOther`](zk_recipes::Error::NodeHeldByOther) from `wait_for_initial_create`
//! (`owner: 0` when a persistent node holds it).

use std::collections::BTreeMap;
use std::time::Duration;

use zk_recipes::CreateMode;
use zk_recipes::{Framework, GroupMember};

use crate::support::{self, live, plant_junk};

async fn server_members(fw: &Framework, path: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for c in fw.children(path).await.unwrap_or_default() {
        if let Ok((data, _)) = fw.get_data(&format!("{path}/{c}")).await {
            out.insert(c, data);
        }
    }
    out
}

/// Property: 3 members beside random junk members see the server's membership (junk
/// included, as data), re-create their own node when it is deleted by hand, and a member
/// whose id an ephemeral junk node holds reports it as a typed error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_members_see_junk_as_members_and_survive_deletes() {
    let mut rng = support::rng("group");
    let path = support::base("group");
    let fws = [support::framework().await, support::framework().await, support::framework().await];
    let junk = plant_junk(&mut rng, &fws[0], &path, "m", 5).await;
    let mut members = Vec::new();
    for (i, fw) in fws.iter().enumerate() {
        let m = GroupMember::new(fw, &path, &format!("m{i}"), format!("real {i}")).unwrap();
        m.start().await.unwrap();
        live("initial create", m.wait_for_initial_create(support::BOUND)).await.unwrap();
        members.push(m);
    }
    // someone deletes the members' nodes: they come back
    for i in 0..3 {
        let _ = fws[0].delete(&format!("{path}/m{i}")).await;
    }
    let churn = support::churn(&fws[0], &path, junk.clone(), rng.u64(..));
    tokio::time::sleep(Duration::from_millis(300)).await;
    support::stop_churn(churn).await;
    live("every member sees the server's membership", async {
        loop {
            let want = server_members(&fws[0], &path).await;
            let real = (0..3).all(|i| want.get(&format!("m{i}")) == Some(&format!("real {i}").into_bytes()));
            if real && members.iter().all(|m| m.members() == want) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    // an ephemeral node of another session under a member's id
    let other = support::framework().await;
    other.create(&format!("{path}/taken"), b"\xff", CreateMode::Ephemeral).await.unwrap();
    let m = GroupMember::new(&fws[1], &path, "taken", "mine").unwrap();
    m.start().await.unwrap();
    let r = m.wait_for_initial_create(Duration::from_secs(2)).await;
    assert!(matches!(r, Err(zk_recipes::Error::NodeHeldByOther { .. })), "{r:?}");
    m.close().await.unwrap();
    other.close();
    // a persistent node under a member's id (no session holds it)
    fws[0].create(&format!("{path}/planted"), b"\xff", CreateMode::Persistent).await.unwrap();
    let m = GroupMember::new(&fws[1], &path, "planted", "mine").unwrap();
    m.start().await.unwrap();
    let r = m.wait_for_initial_create(Duration::from_secs(2)).await;
    assert!(matches!(r, Err(zk_recipes::Error::NodeHeldByOther { owner: 0, .. })), "{r:?}");
    m.close().await.unwrap();
    for m in members {
        m.close().await.unwrap();
    }
    for fw in fws {
        fw.close();
    }
}
