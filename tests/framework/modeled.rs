//! Modeled nodes on a real server: a typed config tree read, written with compare-and-set and
//! watched through the cached view; foreign data reported, not fatal; compression; bad input.

use std::time::Duration;

use assert_matches::assert_matches;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use zk_recipes::modeled::{ModeledEvent, ModeledFramework};
use zk_recipes::{CreateMode, Error, ZooKeeperError};
use zk_recipes_testing::fixtures;

const WAIT: Duration = Duration::from_secs(10);

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Config {
    rps: u32,
    regions: Vec<String>,
}

fn config(rps: u32) -> Config {
    Config { rps, regions: vec!["eu".into(), "us".into()] }
}

async fn next<T>(events: &mut (impl futures_util::Stream<Item = ModeledEvent<T>> + Unpin)) -> ModeledEvent<T> {
    tokio::time::timeout(WAIT, events.next()).await.expect("an event in time").expect("the stream goes on")
}

#[tokio::test]
async fn a_typed_config_tree_is_read_written_with_compare_and_set_and_watched() {
    let cs = fixtures::shared_server().await;
    let (fw, other) = (fixtures::framework(&cs).await, fixtures::framework(&cs).await);
    let root = format!("/{}", fixtures::unique("modeled"));
    let configs = ModeledFramework::<Config>::new(&fw, &format!("{root}/tenants/{{tenant}}/config")).unwrap();
    let cached = configs.cached().unwrap();
    let mut events = Box::pin(cached.events());
    cached.start().await.unwrap();
    assert_matches!(next(&mut events).await, ModeledEvent::Initialized);

    let acme = configs.at(&[&"acme"]).unwrap();
    assert_eq!(acme.path(), format!("{root}/tenants/acme/config"));
    assert!(acme.read_if_exists().await.unwrap().is_none());
    acme.create(&config(100)).await.unwrap();
    assert_matches!(acme.create(&config(1)).await, Err(Error::ZooKeeper(ZooKeeperError::NodeExists)));
    let read = acme.read().await.unwrap();
    assert_eq!(read.value, config(100));
    assert_matches!(
        next(&mut events).await,
        ModeledEvent::Created { parameters, model, .. } if parameters == ["acme"] && model.value == config(100)
    );

    // compare-and-set: another writer in between makes the read's version stale
    let theirs = ModeledFramework::<Config>::new(&other, configs.template().as_str()).unwrap().at(&[&"acme"]).unwrap();
    theirs.set(&config(150), Some(read.version())).await.unwrap();
    let stale = acme.set(&config(200), Some(read.version())).await.unwrap_err();
    assert!(stale.is_conflict(), "{stale:?}");
    let fresh = acme.read().await.unwrap();
    assert_eq!(fresh.value, config(150));
    acme.set(&config(300), Some(fresh.version())).await.unwrap();
    assert_matches!(next(&mut events).await, ModeledEvent::Changed { model, .. } if model.value == config(150));
    assert_matches!(next(&mut events).await, ModeledEvent::Changed { model, .. } if model.value == config(300));
    assert_eq!(cached.get(&[&"acme"]).unwrap().unwrap().value, config(300));

    // foreign data at an instance is reported, not fatal; nodes off the template are not reported
    other.create(&format!("{root}/tenants/evil/config"), b"{not json", CreateMode::Persistent).await.unwrap();
    assert_matches!(next(&mut events).await, ModeledEvent::Invalid { path, error } if path.ends_with("/evil/config") && error.kind() == zk_recipes::ErrorKind::CorruptData);
    assert_matches!(cached.get(&[&"evil"]), Some(Err(Error::CorruptData { .. })));
    other.create(&format!("{root}/tenants/acme/other"), b"x", CreateMode::Persistent).await.unwrap();
    configs.at(&[&"beta"]).unwrap().create_or_set(&config(5)).await.unwrap();
    assert_matches!(next(&mut events).await, ModeledEvent::Created { parameters, .. } if parameters == ["beta"]);
    let mut instances: Vec<_> = cached.instances().into_iter().map(|(p, m)| (p[0].clone(), m.is_ok())).collect();
    instances.sort();
    assert_eq!(instances, [("acme".into(), true), ("beta".into(), true), ("evil".into(), false)]);

    // a versioned delete: refused at a stale version, done at the current one
    let at = acme.read().await.unwrap().version();
    assert!(acme.delete(Some(at + 1)).await.unwrap_err().is_conflict());
    acme.delete(Some(at)).await.unwrap();
    assert_matches!(next(&mut events).await, ModeledEvent::Deleted { parameters, .. } if parameters == ["acme"]);
    assert!(cached.get(&[&"acme"]).is_none());
    cached.close().await.unwrap();
}

#[tokio::test]
async fn children_are_read_as_models_and_compressed_models_are_gzip() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    let root = format!("/{}", fixtures::unique("modeled-children"));
    let shards = ModeledFramework::<u32>::new(&fw, &format!("{root}/{{shard}}")).unwrap().compressed();
    for shard in 0..3u32 {
        shards.at(&[&shard]).unwrap().create(&(shard * 10)).await.unwrap();
    }
    let raw = fw.get_data(&format!("{root}/2")).await.unwrap().0;
    assert_eq!(raw[..2], [0x1f, 0x8b], "stored as gzip");
    let parent = ModeledFramework::<u32>::new(&fw, &root).unwrap().compressed();
    let mut children = parent.at(&[]).unwrap().children().await.unwrap();
    children.sort_by(|a, b| a.0.cmp(&b.0));
    let values: Vec<_> = children.iter().map(|(name, m)| (name.as_str(), m.value)).collect();
    assert_eq!(values, [("0", 0), ("1", 10), ("2", 20)]);
    // read without the compression, the data is not a model
    let plain = ModeledFramework::<u32>::new(&fw, &format!("{root}/{{shard}}")).unwrap();
    assert_matches!(plain.at(&[&1]).unwrap().read().await, Err(Error::CorruptData { .. }));
}

#[tokio::test]
async fn bad_templates_and_values_are_typed_errors() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework(&cs).await;
    for bad in ["relative/{a}", "/", "/a{b}", "/{a}/{a}"] {
        assert_matches!(ModeledFramework::<u32>::new(&fw, bad), Err(Error::InvalidArgument { .. }), "{bad}");
    }
    let m = ModeledFramework::<u32>::new(&fw, "/m/{a}/{b}").unwrap();
    for values in [vec!["x"], vec!["x", "y/z"], vec!["..", "y"], vec!["x", ""]] {
        let values: Vec<&dyn std::fmt::Display> = values.iter().map(|v| v as &dyn std::fmt::Display).collect();
        assert_matches!(m.at(&values), Err(Error::InvalidArgument { .. }));
    }
}
