//! Compression with a real Curator 5.4: our gzip read by Curator's `.decompressed()` and
//! Curator's `.compressed()` writes read by ours, the provider's bytes side by side, and both
//! refusing data that was written uncompressed.

use zk_recipes::{CompressionProvider, CreateMode, Error, ErrorKind, GzipCompression};
use zk_recipes_testing::curator::CuratorPeer;
use zk_recipes_testing::{fixtures, Error as KitError};

/// Short text, Curator's empty case, repetitive and less repetitive data of several sizes.
fn samples() -> Vec<Vec<u8>> {
    let mut out = vec![b"hello hello hello, compressed".to_vec(), Vec::new(), b"x".to_vec()];
    out.push(b"abcdefghij".repeat(50));
    out.push((0..5000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect());
    out.push(b"{\"name\":\"orders\",\"port\":8080}".repeat(200));
    out
}

#[tokio::test]
async fn curator_reads_our_gzip_and_we_read_curators() {
    let cs = fixtures::shared_server().await;
    let peer: std::sync::Arc<CuratorPeer> = crate::peer().await;
    peer.connect("gzip-java", &cs).await.unwrap();
    let fw = fixtures::framework(&cs).await;
    let gz = fw.compressed();
    let base = format!("/{}", fixtures::unique("interop-gzip"));
    for (i, data) in samples().into_iter().enumerate() {
        // ours, read by Curator
        let ours = format!("{base}/ours-{i}");
        gz.create(&ours, &data, CreateMode::Persistent).await.unwrap();
        assert_eq!(peer.gzip_get("gzip-java", &ours).await.unwrap(), data, "Curator reads {ours}");
        // Curator's, read by us
        let theirs = format!("{base}/theirs-{i}");
        peer.gzip_create("gzip-java", &theirs, &data).await.unwrap();
        let (raw, _) = fw.get_data(&theirs).await.unwrap();
        assert_eq!(raw[..2], [0x1f, 0x8b], "Curator stores gzip at {theirs}");
        assert_eq!(gz.get_data(&theirs).await.unwrap().0, data, "we read {theirs}");
        // and the other way round on the same node: Curator's write, our write
        let changed = [data.as_slice(), b"+java"].concat();
        peer.gzip_set("gzip-java", &ours, &changed).await.unwrap();
        assert_eq!(gz.get_data(&ours).await.unwrap().0, changed);
        let changed = [data.as_slice(), b"+rust"].concat();
        gz.set_data(&theirs, &changed, None).await.unwrap();
        assert_eq!(peer.gzip_get("gzip-java", &theirs).await.unwrap(), changed);
    }
    peer.close("gzip-java").await.unwrap();
}

#[tokio::test]
async fn our_gzip_bytes_match_curators_provider() {
    let peer = crate::peer().await;
    for data in samples() {
        let java = peer.gzip_compress(&data).await.unwrap();
        let ours = GzipCompression::default().compress("/p", &data).unwrap();
        // the same header (10 bytes) and trailer (CRC-32, length) as Curator 5.4 writes
        assert_eq!(ours[..10], java[..10], "header for {} bytes", data.len());
        assert_eq!(ours[ours.len() - 8..], java[java.len() - 8..], "trailer for {} bytes", data.len());
        if data.len() < 64 {
            // short data: the very same DEFLATE stream too
            assert_eq!(ours, java, "{} bytes", data.len());
        }
        // each reads the other's
        assert_eq!(GzipCompression::default().decompress("/p", &java).unwrap(), data);
        assert_eq!(peer.gzip_decompress(&ours).await.unwrap(), data);
    }
}

#[tokio::test]
async fn both_refuse_uncompressed_data() {
    let cs = fixtures::shared_server().await;
    let peer = crate::peer().await;
    peer.connect("gzip-plain-java", &cs).await.unwrap();
    let fw = fixtures::framework(&cs).await;
    let base = format!("/{}", fixtures::unique("interop-gzip-plain"));
    for (name, data) in [("text", b"plain text, never compressed".as_slice()), ("empty", b"")] {
        let path = format!("{base}/{name}");
        fw.create(&path, data, CreateMode::Persistent).await.unwrap();
        // Curator 5.4's GzipCompressionProvider has no fallback: it throws
        let refused = peer.gzip_get("gzip-plain-java", &path).await.unwrap_err();
        let KitError::Peer(message) = &refused else { panic!("{refused:?}") };
        println!("Curator reading uncompressed {name:?}: {message}");
        assert!(message.contains("ZipException") || message.contains("EOFException"), "{message}");
        // and so do we, with a typed error
        let e = fw.compressed().get_data(&path).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CorruptData, "{e}");
        assert!(matches!(e, Error::CorruptData { .. }));
    }
    peer.close("gzip-plain-java").await.unwrap();
}
