//! A per-path [`AclProvider`] (Curator's `ACLProvider.getAclForPath`) against a real server:
//! asked with the full path (namespace included) for nodes created directly, in transactions,
//! as missing parents, and by recipes; `None` is the default; an empty list is refused.

use std::sync::{Arc, Mutex};
use zk_recipes::ZooKeeperError;

use assert_matches::assert_matches;
use zk_recipes::{Acl, AclProvider, CreateMode, Error, Framework, InterProcessMutex, Permissions, SharedCount};
use zk_recipes_testing::fixtures;

/// Read, create and delete (no write, no admin) for anyone under `prefix`; the default
/// elsewhere; an empty list under `empty`. Records the paths it is asked for.
struct NoWritesUnder {
    prefix: String,
    empty: String,
    asked: Arc<Mutex<Vec<String>>>,
}

fn no_writes() -> Vec<Acl> {
    vec![Acl::anyone(Permissions::READ | Permissions::CREATE | Permissions::DELETE)]
}

fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl AclProvider for NoWritesUnder {
    fn default_acl(&self) -> Vec<Acl> {
        Acl::anyone_all()
    }

    fn acl_for_path(&self, path: &str) -> Option<Vec<Acl>> {
        self.asked.lock().unwrap().push(path.to_string());
        if under(path, &self.empty) {
            return Some(Vec::new());
        }
        under(path, &self.prefix).then(no_writes)
    }
}

async fn framework(cs: &str, ns: &str) -> (Framework, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let provider =
        NoWritesUnder { prefix: format!("/{ns}/ro"), empty: format!("/{ns}/empty"), asked: Arc::clone(&asked) };
    let fw = fixtures::framework_with(cs, |b| b.namespace(ns).acl_provider(provider)).await;
    (fw, asked)
}

#[tokio::test]
async fn the_provider_chooses_the_acl_of_nodes_parents_and_transactions() {
    let cs = fixtures::shared_server().await;
    let ns = fixtures::unique("aclp");
    let (fw, asked) = framework(&cs, &ns).await;

    fw.create("/ro/a/b/node", b"1", CreateMode::Persistent).await.unwrap();
    fw.create("/rw/node", b"1", CreateMode::Persistent).await.unwrap();
    for path in ["/ro", "/ro/a", "/ro/a/b", "/ro/a/b/node"] {
        assert_eq!(fw.get_acl(path).await.unwrap().0, no_writes(), "{path} (parents too)");
    }
    for path in ["/rw", "/rw/node"] {
        assert_eq!(fw.get_acl(path).await.unwrap().0, Acl::anyone_all(), "{path}: the default");
    }
    // the namespace's own node was asked for (and got the default)
    assert_eq!(
        Framework::get_acl(&fixtures::framework(&cs).await, &format!("/{ns}")).await.unwrap().0,
        Acl::anyone_all()
    );
    {
        let asked = asked.lock().unwrap();
        for path in [format!("/{ns}"), format!("/{ns}/ro/a/b"), format!("/{ns}/ro/a/b/node"), format!("/{ns}/rw/node")]
        {
            assert!(asked.contains(&path), "asked with full paths: {path} in {asked:?}");
        }
    }
    // the ACL is in force: no writes under the prefix, writes elsewhere
    assert_matches!(
        fw.set_data("/ro/a/b/node", b"2", None).await.unwrap_err(),
        Error::ZooKeeper(ZooKeeperError::NoAuth)
    );
    fw.set_data("/rw/node", b"2", None).await.unwrap();

    // a sequential node and a transaction's creates
    let seq = fw.create("/ro/seq-", b"", CreateMode::PersistentSequential).await.unwrap();
    assert_eq!(fw.get_acl(&seq.path).await.unwrap().0, no_writes());
    fw.transaction()
        .create("/ro/t1", b"", CreateMode::Persistent)
        .create("/rw/t2", b"", CreateMode::Persistent)
        .commit()
        .await
        .unwrap();
    assert_eq!(fw.get_acl("/ro/t1").await.unwrap().0, no_writes());
    assert_eq!(fw.get_acl("/rw/t2").await.unwrap().0, Acl::anyone_all());
    fw.shutdown(std::time::Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn recipes_nodes_get_the_providers_acl() {
    let cs = fixtures::shared_server().await;
    let ns = fixtures::unique("aclp");
    let (fw, _) = framework(&cs, &ns).await;

    // a lock's node and its (container) parents
    let lock = InterProcessMutex::new(&fw, "/ro/locks/job").unwrap();
    let guard = lock.acquire().await.unwrap();
    assert_eq!(fw.get_acl(guard.path()).await.unwrap().0, no_writes(), "{}", guard.path());
    assert_eq!(fw.get_acl("/ro/locks").await.unwrap().0, no_writes());
    guard.release().await.unwrap();

    // a shared count's node, under and outside the prefix
    let ro = SharedCount::new(&fw, "/ro/count", 7).unwrap();
    ro.start().await.unwrap();
    assert_eq!(fw.get_acl("/ro/count").await.unwrap().0, no_writes());
    assert_matches!(ro.set(8).await.unwrap_err(), Error::ZooKeeper(ZooKeeperError::NoAuth), "the count is read-only");
    assert_eq!(ro.get().await.unwrap().value, 7);
    let rw = SharedCount::new(&fw, "/rw/count", 7).unwrap();
    rw.start().await.unwrap();
    assert_eq!(fw.get_acl("/rw/count").await.unwrap().0, Acl::anyone_all());
    rw.set(8).await.unwrap();
    fw.shutdown(std::time::Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn an_empty_acl_from_the_provider_is_refused() {
    let cs = fixtures::shared_server().await;
    let ns = fixtures::unique("aclp");
    let (fw, _) = framework(&cs, &ns).await;
    assert_matches!(
        fw.create("/empty/x", b"", CreateMode::Persistent).await.unwrap_err(),
        Error::ZooKeeper(ZooKeeperError::InvalidAcl)
    );
    assert_eq!(fw.exists("/empty").await.unwrap(), None, "nothing was created");

    struct NoDefault;
    impl AclProvider for NoDefault {
        fn default_acl(&self) -> Vec<Acl> {
            Vec::new()
        }
        fn acl_for_path(&self, _: &str) -> Option<Vec<Acl>> {
            None
        }
    }
    let refused = Framework::builder().connect_string(cs.as_str()).acl_provider(NoDefault).connect().await;
    assert_matches!(refused.unwrap_err(), Error::InvalidArgument { argument: "acl_provider", .. });
    fw.shutdown(std::time::Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn with_acl_overrides_the_provider_for_one_handle() {
    let cs = fixtures::shared_server().await;
    let ns = fixtures::unique("with-acl");
    let (fw, _asked) = framework(&cs, &ns).await;
    let read_only = vec![Acl::anyone(Permissions::READ | Permissions::ADMIN)];
    let ro = fw.with_acl(read_only.clone());

    // the node gets the handle's ACL; the parents it makes keep the provider's (the default)
    ro.create("/rw/a/b/node", b"1", CreateMode::Persistent).await.unwrap();
    assert_eq!(fw.get_acl("/rw/a/b/node").await.unwrap().0, read_only);
    for parent in ["/rw", "/rw/a", "/rw/a/b"] {
        assert_eq!(fw.get_acl(parent).await.unwrap().0, Acl::anyone_all(), "{parent}");
    }
    // it means it: nobody may write the node
    assert_matches!(fw.set_data("/rw/a/b/node", b"2", None).await, Err(Error::ZooKeeper(ZooKeeperError::NoAuth)));
    // under the provider's own rule too (the handle wins)
    ro.create("/ro/x", b"1", CreateMode::Persistent).await.unwrap();
    assert_eq!(fw.get_acl("/ro/x").await.unwrap().0, read_only);
    assert_eq!(fw.get_acl("/ro").await.unwrap().0, no_writes(), "the parent: the provider's");

    // protected, TTL-less sequential and transaction creates, and a compressed view of it
    let p = ro.create_protected("/rw", "p-", b"", CreateMode::EphemeralSequential).await.unwrap();
    assert_eq!(fw.get_acl(&p.path).await.unwrap().0, read_only);
    ro.transaction().create("/rw/txn", b"", CreateMode::Persistent).commit().await.unwrap();
    assert_eq!(fw.get_acl("/rw/txn").await.unwrap().0, read_only);
    ro.compressed().create("/rw/gz", b"z", CreateMode::Persistent).await.unwrap();
    assert_eq!(fw.get_acl("/rw/gz").await.unwrap().0, read_only);
    // a recipe made with the handle: its nodes get the ACL
    let count = SharedCount::new(&ro, "/rw/count", 1).unwrap();
    count.start().await.unwrap();
    assert_eq!(fw.get_acl("/rw/count").await.unwrap().0, read_only);
    drop(count);

    // another handle (and the original) are unaffected
    fw.create("/rw/plain", b"1", CreateMode::Persistent).await.unwrap();
    assert_eq!(fw.get_acl("/rw/plain").await.unwrap().0, Acl::anyone_all());
    fw.uncompressed().create("/rw/plain2", b"1", CreateMode::Persistent).await.unwrap();
    assert_eq!(fw.get_acl("/rw/plain2").await.unwrap().0, Acl::anyone_all());

    // an empty list is refused before anything is sent
    let empty = fw.with_acl(Vec::new());
    assert_matches!(
        empty.create("/rw/empty", b"1", CreateMode::Persistent).await,
        Err(Error::ZooKeeper(ZooKeeperError::InvalidAcl))
    );
    assert!(fw.exists("/rw/empty").await.unwrap().is_none());
}
