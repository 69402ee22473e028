//! Group membership: members on separate sessions see each other and follow data changes,
//! leaves and drops; one id cannot be held twice; bad ids are typed errors that leave nothing.

use std::collections::BTreeMap;
use zk_recipes::ZooKeeperError;

use futures_util::{Stream, StreamExt};
use zk_recipes::{Error, GroupMember};
use zk_recipes_testing::fixtures::{self, eventually, within};

use crate::support::*;

fn group(entries: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
    entries.iter().map(|(id, data)| (id.to_string(), data.as_bytes().to_vec())).collect()
}

/// Reads member lists until one equals `want`.
async fn until_members<S: Stream<Item = BTreeMap<String, Vec<u8>>> + Unpin>(
    changes: &mut S,
    want: &BTreeMap<String, Vec<u8>>,
) {
    within(LIVENESS, async { while changes.next().await.expect("the change stream ended") != *want {} }).await;
}

#[tokio::test]
async fn members_see_each_other_and_follow_changes() {
    let cs = fixtures::shared_server().await;
    let path = format!("{}/workers", unique_root());
    let mut members = Vec::new();
    let mut fws = Vec::new();
    for (id, data) in [("a", "da"), ("b", "db"), ("c", "dc")] {
        let fw = fixtures::framework(&cs).await;
        let member = GroupMember::new(&fw, &path, id, data).unwrap();
        member.start().await.unwrap();
        assert_eq!(member.wait_for_initial_create(LIVENESS).await.unwrap(), format!("{path}/{id}"));
        members.push(member);
        fws.push(fw);
    }
    let all = group(&[("a", "da"), ("b", "db"), ("c", "dc")]);
    for member in &members {
        eventually(LIVENESS, format!("{} sees everyone", member.id()), || async { member.members() == all }).await;
    }
    let mut changes = Box::pin(members[0].changes());
    until_members(&mut changes, &all).await;
    // one id, one registration: another session cannot join as "b"
    let intruder = GroupMember::new(&fws[0], &path, "b", "x").unwrap();
    intruder.start().await.unwrap();
    assert!(matches!(intruder.wait_for_initial_create(LIVENESS).await, Err(Error::NodeHeldByOther { .. })));
    intruder.close().await.unwrap();
    assert_eq!(fws[0].get_data(&format!("{path}/b")).await.unwrap().0, b"db", "b untouched");
    // data changes, a leave and a drop
    members[1].set_data("db2").unwrap();
    until_members(&mut changes, &group(&[("a", "da"), ("b", "db2"), ("c", "dc")])).await;
    let c = members.pop().unwrap();
    c.close().await.unwrap();
    until_members(&mut changes, &group(&[("a", "da"), ("b", "db2")])).await;
    drop(members.pop());
    until_members(&mut changes, &group(&[("a", "da")])).await;
    // the last one leaves: its stream ends
    members[0].close().await.unwrap();
    within(LIVENESS, async { while changes.next().await.is_some() {} }).await;
    let left = match fws[0].children(&path).await {
        Err(Error::ZooKeeper(ZooKeeperError::NoNode)) => Vec::new(),
        other => other.unwrap(),
    };
    assert_eq!(left, Vec::<String>::new(), "every member node gone");
}

#[tokio::test]
async fn bad_ids_are_typed_errors_and_leave_nothing() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let path = format!("{}/g", unique_root());
    for id in ["", "a/b", "/", ".", ".."] {
        let err = GroupMember::new(&fw, &path, id, "").unwrap_err();
        assert!(matches!(err, Error::InvalidArgument { .. }), "{id:?}: {err:?}");
    }
    assert!(matches!(GroupMember::new(&fw, &path, "a\u{1}", ""), Err(Error::InvalidPath { .. })));
    for bad in ["", "/", "g", "/g/"] {
        assert!(matches!(GroupMember::new(&fw, bad, "a", ""), Err(Error::InvalidPath { .. })), "{bad:?}");
    }
    assert_eq!(fw.exists(&path).await.unwrap(), None);
}
