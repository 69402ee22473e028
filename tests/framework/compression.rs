//! Compression against a real server: a compressed handle's round trip, the framework-wide
//! switch on recipe data (gzip on the wire), corrupt and uncompressed data as typed errors,
//! and a provider of the caller's own.

use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use zk_recipes::{
    CompressionProvider, CreateMode, Error, ErrorKind, Framework, GzipCompression, SharedCount, SharedValue,
    SimpleDistributedQueue,
};
use zk_recipes_testing::fixtures;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

fn gunzip(path: &str, stored: &[u8]) -> Vec<u8> {
    assert_eq!(stored[..2], GZIP_MAGIC, "{path} is stored gzipped: {stored:?}");
    GzipCompression::default().decompress(path, stored).unwrap()
}

async fn base(fw: &Framework, what: &str) -> String {
    let base = format!("/{}", fixtures::unique(what));
    fw.uncompressed().create(&base, b"", CreateMode::Persistent).await.unwrap();
    base
}

#[tokio::test]
async fn a_compressed_handle_round_trips_and_stores_gzip() {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let base = base(&fw, "compressed-handle").await;
    let gz = fw.compressed();
    assert!(gz.compression_enabled() && !fw.compression_enabled());
    let big = b"compress me ".repeat(1000);
    let path = format!("{base}/big");
    gz.create(&path, &big, CreateMode::Persistent).await.unwrap();
    assert_eq!(gz.get_data(&path).await.unwrap().0, big);
    let (raw, stat) = fw.get_data(&path).await.unwrap();
    assert!(raw.len() < big.len() / 10, "compressed: {} bytes for {}", raw.len(), big.len());
    assert_eq!(gunzip(&path, &raw), big);
    assert_eq!(stat.data_length as usize, raw.len());

    gz.set_data(&path, b"", None).await.unwrap();
    assert_eq!(fw.get_data(&path).await.unwrap().0.len(), 20, "Curator's 20 bytes for no data");
    assert_eq!(gz.get_data(&path).await.unwrap().0, b"");

    // protected creates and transactions compress too
    let node = gz.create_protected(&base, "p-", b"protected", CreateMode::EphemeralSequential).await.unwrap();
    assert_eq!(gunzip(&node.path, &fw.get_data(&node.path).await.unwrap().0), b"protected");
    let t = format!("{base}/txn");
    gz.transaction().create(&t, b"created", CreateMode::Persistent).commit().await.unwrap();
    assert_eq!(gunzip(&t, &fw.get_data(&t).await.unwrap().0), b"created");
    gz.transaction().set_data(&t, b"written", Some(0)).commit().await.unwrap();
    assert_eq!(gz.get_data(&t).await.unwrap().0, b"written");

    // multi_read decompresses the data it reads
    use zk_recipes::ops::{ReadOp, ReadResult};
    let answers = gz.multi_read(&[ReadOp::Data(&t), ReadOp::Children(&base)]).await.unwrap();
    assert!(matches!(&answers[0], ReadResult::Data(data, _) if data == b"written"), "{answers:?}");
    assert!(matches!(&answers[1], ReadResult::Children(c) if c.len() == 3), "{answers:?}");
    let answers = fw.multi_read(&[ReadOp::Data(&t)]).await.unwrap();
    assert!(matches!(&answers[0], ReadResult::Data(data, _) if data[..2] == GZIP_MAGIC), "{answers:?}");

    // update_many reads and writes through the handle's compression
    gz.update_many(&[&t], |v| vec![Some([v[0].as_deref().unwrap(), b"+1"].concat())]).await.unwrap();
    assert_eq!(gz.get_data(&t).await.unwrap().0, b"written+1");
}

#[tokio::test]
async fn enable_compression_compresses_recipe_data_on_the_wire() {
    let cs = fixtures::shared_server().await;
    let fw = fixtures::framework_with(&cs, |b| b.enable_compression()).await;
    let plain = fixtures::framework(&cs).await;
    assert!(fw.compression_enabled() && !fw.uncompressed().compression_enabled());
    let base = base(&fw, "enabled").await;

    // SharedCount (and so SharedValue): start, set, compare-and-set, the change stream
    let counter = format!("{base}/count");
    let count = SharedCount::new(&fw, &counter, 5).unwrap();
    count.start().await.unwrap();
    assert_eq!(gunzip(&counter, &plain.get_data(&counter).await.unwrap().0), 5i32.to_be_bytes());
    let mut changes = Box::pin(count.changes());
    assert_eq!(changes.next().await.unwrap().unwrap().value, 5);
    count.set(7).await.unwrap();
    assert_eq!(gunzip(&counter, &plain.get_data(&counter).await.unwrap().0), 7i32.to_be_bytes());
    let known = count.get().await.unwrap();
    assert_eq!(known.value, 7);
    assert_eq!(changes.next().await.unwrap().unwrap().value, 7);
    let stale = known.clone();
    count.compare_and_set(&known, 8).await.unwrap().expect("written");
    // a refused compare-and-set returns the current value, decompressed
    let current = count.compare_and_set(&stale, 100).await.unwrap().expect_err("refused");
    assert_eq!(current.value, 8);
    assert_eq!(gunzip(&counter, &plain.get_data(&counter).await.unwrap().0), 8i32.to_be_bytes());

    // a SharedValue on an uncompressed handle reads the stored gzip bytes
    let reader = SharedValue::new(&fw.uncompressed(), &counter, Vec::new()).unwrap();
    assert_eq!(reader.get().await.unwrap().value[..2], GZIP_MAGIC);

    // queue items
    let q = format!("{base}/queue");
    let queue = SimpleDistributedQueue::new(&fw, &q).unwrap();
    queue.offer(b"item one").await.unwrap();
    let children = plain.children(&q).await.unwrap();
    assert_eq!(children.len(), 1);
    let item = format!("{q}/{}", children[0]);
    assert_eq!(gunzip(&item, &plain.get_data(&item).await.unwrap().0), b"item one");
    assert_eq!(queue.take().await.unwrap(), b"item one");

    // the framework's own calls, and the opt-out
    let own = format!("{base}/own");
    fw.create(&own, b"own", CreateMode::Persistent).await.unwrap();
    assert_eq!(gunzip(&own, &plain.get_data(&own).await.unwrap().0), b"own");
    let opted_out = format!("{base}/opted-out");
    fw.uncompressed().create(&opted_out, b"plain", CreateMode::Persistent).await.unwrap();
    assert_eq!(plain.get_data(&opted_out).await.unwrap().0, b"plain");
}

#[tokio::test]
async fn corrupt_and_uncompressed_data_are_typed_errors() {
    let fw = fixtures::framework(&fixtures::shared_server().await).await;
    let base = base(&fw, "corrupt").await;
    let gz = fw.compressed();
    let cases: [(&str, &[u8]); 4] = [
        ("plain", b"written uncompressed"),
        ("empty", b""),
        ("magic-then-junk", &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8]),
        ("bad-trailer", &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 3, 0, 1, 0, 0, 0, 0, 0, 0, 0]),
    ];
    for (name, bytes) in cases {
        let path = format!("{base}/{name}");
        fw.create(&path, bytes, CreateMode::Persistent).await.unwrap();
        let e = gz.get_data(&path).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CorruptData, "{name}: {e}");
        assert!(matches!(&e, Error::CorruptData { path: p, .. } if *p == path), "{name}: {e:?}");
        // the uncompressed handle reads it as it is
        assert_eq!(gz.uncompressed().get_data(&path).await.unwrap().0, bytes);
    }
    // a recipe on a compressing framework over plain data: a typed error, no panic
    let plain_count = format!("{base}/plain-count");
    let count = SharedCount::new(&fw, &plain_count, 1).unwrap();
    count.start().await.unwrap();
    let e = SharedCount::new(&gz, &plain_count, 1).unwrap().get().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::CorruptData, "{e}");
}

/// Reverses the bytes and records the paths it was given.
#[derive(Default, Clone)]
struct Reversing {
    paths: Arc<Mutex<Vec<String>>>,
}

impl CompressionProvider for Reversing {
    fn compress(&self, path: &str, data: &[u8]) -> zk_recipes::Result<Vec<u8>> {
        self.paths.lock().unwrap().push(path.to_string());
        Ok([b"REV:".as_slice(), &data.iter().rev().copied().collect::<Vec<_>>()].concat())
    }

    fn decompress(&self, path: &str, stored: &[u8]) -> zk_recipes::Result<Vec<u8>> {
        self.paths.lock().unwrap().push(path.to_string());
        match stored.strip_prefix(b"REV:") {
            Some(rest) => Ok(rest.iter().rev().copied().collect()),
            None => Err(Error::corrupt_data(path, "not reversed")),
        }
    }
}

#[tokio::test]
async fn a_custom_provider_is_used_for_compressed_handles() {
    let cs = fixtures::shared_server().await;
    let provider = Reversing::default();
    let fw = fixtures::framework_with(&cs, |b| b.compression_provider(provider.clone())).await;
    let base = base(&fw, "custom").await;
    let path = format!("{base}/node");
    let gz = fw.compressed();
    gz.create(&path, b"abc", CreateMode::Persistent).await.unwrap();
    assert_eq!(fw.get_data(&path).await.unwrap().0, b"REV:cba");
    assert_eq!(gz.get_data(&path).await.unwrap().0, b"abc");
    assert_eq!(*provider.paths.lock().unwrap(), [path.clone(), path.clone()]);
    fw.set_data(&path, b"plain", None).await.unwrap();
    assert_eq!(gz.get_data(&path).await.unwrap_err().kind(), ErrorKind::CorruptData);
}

#[tokio::test]
async fn a_ttl_node_of_a_compressed_handle_is_compressed() {
    let fw = fixtures::framework(&fixtures::shared_ttl_server().await).await;
    let base = base(&fw, "compressed-ttl").await;
    let path = format!("{base}/ttl");
    let gz = fw.compressed();
    gz.create_with_ttl(&path, b"short-lived", CreateMode::Persistent, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(gunzip(&path, &fw.get_data(&path).await.unwrap().0), b"short-lived");
    assert_eq!(gz.get_data(&path).await.unwrap().0, b"short-lived");
}
