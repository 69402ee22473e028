//! A Curator 5.4 `GroupMember` (in the peer) and ours in one group: each sees the other with
//! its data, follows the other's data changes and leave; both write the same layout (an
//! ephemeral `PATH/ID` holding the member's bytes).

use std::collections::BTreeMap;
use std::time::Duration;

use zk_recipes::GroupMember;
use zk_recipes_testing::fixtures::{self, eventually};

const WAIT: Duration = Duration::from_secs(20);

fn group(entries: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
    entries.iter().map(|(id, data)| (id.to_string(), data.as_bytes().to_vec())).collect()
}

#[tokio::test]
async fn curator_and_our_group_members_see_each_other() {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    let path = format!("/{}/group", fixtures::unique("interop-group"));
    let java_session = peer.connect("group-java", &cs).await.unwrap();
    peer.group_start("group-java", "g1", &path, "java-1", b"j").await.unwrap();
    let fw = fixtures::framework(&cs).await;
    let ours = GroupMember::new(&fw, &path, "rust-1", "r").unwrap();
    ours.start().await.unwrap();
    ours.wait_for_initial_create(WAIT).await.unwrap();
    // the same layout on both sides
    for (id, data, owner) in [("java-1", "j", java_session), ("rust-1", "r", fw.status().session_id)] {
        let member = format!("{path}/{id}");
        eventually(WAIT, format!("{member} there"), || async { fw.exists(&member).await.unwrap().is_some() }).await;
        let (got, stat) = fw.get_data(&member).await.unwrap();
        assert_eq!((got.as_slice(), stat.ephemeral_owner), (data.as_bytes(), owner), "{member}");
    }
    let sees = |want: BTreeMap<String, Vec<u8>>, what: &'static str| {
        let (peer, ours, want2) = (peer.clone(), &ours, want.clone());
        async move {
            eventually(WAIT, format!("ours: {what}"), || async { ours.members() == want }).await;
            eventually(WAIT, format!("Curator: {what}"), || async {
                peer.group_members("group-java", "g1").await.unwrap() == want2
            })
            .await;
        }
    };
    sees(group(&[("java-1", "j"), ("rust-1", "r")]), "both members").await;
    ours.set_data("r2").unwrap();
    sees(group(&[("java-1", "j"), ("rust-1", "r2")]), "our new data").await;
    peer.group_set("group-java", "g1", b"j2").await.unwrap();
    sees(group(&[("java-1", "j2"), ("rust-1", "r2")]), "Curator's new data").await;
    peer.group_close("group-java", "g1").await.unwrap();
    eventually(WAIT, "Curator's member left", || async { ours.members() == group(&[("rust-1", "r2")]) }).await;
    // ours leaves: a new Curator member sees only itself
    ours.close().await.unwrap();
    peer.group_start("group-java", "g2", &path, "java-2", b"").await.unwrap();
    eventually(WAIT, "Curator sees ours gone", || async {
        peer.group_members("group-java", "g2").await.unwrap() == group(&[("java-2", "")])
    })
    .await;
    peer.group_close("group-java", "g2").await.unwrap();
    peer.close("group-java").await.unwrap();
}
