//! `zkr watch`: a cache's events, one line each, until SIGINT/SIGTERM (then exit 0).
//!
//! The lines are a contract (README, `## zkr`): with `--json`,
//! `{"event":"created"|"changed","path":P,"data":TEXT,"version":V,"czxid":C,"mzxid":M}`
//! (`data_base64` for data that is not UTF-8, neither with `--no-data`),
//! `{"event":"deleted","path":P,"version":V,"czxid":C,"mzxid":M}` (the last stat known),
//! `{"event":"initialized"}` once after the initial nodes, `{"event":"resynced"}` after the
//! differences a resync found. Connection losses do not end it: the cache resyncs.

use std::collections::BTreeMap;
use std::pin::pin;

use base64::Engine as _;
use futures_util::StreamExt;
use serde_json::json;
use zk_recipes::{Cache, CacheEvent, CachedNode, CompressionProvider, Framework, GzipCompression};

use crate::args::{WatchArgs, WatchMode};
use crate::exit::{self, CliError, CliResult};
use crate::{output, Ctx};

/// Events a slow terminal may fall behind by before the cache drops them for a resync (which
/// this command turns back into the events it missed).
const BUFFER: usize = 65_536;

pub async fn watch(fw: &Framework, args: WatchArgs, ctx: &mut Ctx) -> CliResult {
    let builder = match args.mode {
        WatchMode::Tree => {
            let tree = Cache::tree(fw, &args.path);
            match args.max_depth {
                Some(depth) => tree.max_depth(depth),
                None => tree,
            }
        }
        WatchMode::Children => Cache::children(fw, &args.path),
        WatchMode::Node => Cache::node(fw, &args.path),
    };
    let cache = builder.with_data(!args.no_data).event_capacity(BUFFER).build()?;
    let mut events = pin!(cache.events());
    cache.start().await?;
    let mut printed = Printed { json: ctx.global.json, compressed: ctx.global.compressed, nodes: BTreeMap::new() };
    loop {
        let next = tokio::select! {
            next = events.next() => next,
            _ = ctx.signals.recv() => break,
        };
        let Some(event) = next else {
            let reason = cache.failure().map_or_else(|| "the cache stopped".to_string(), |e| e.to_string());
            return Err(CliError::new(exit::FAILURE, reason));
        };
        for line in printed.apply(event, &cache) {
            output::line(&line);
        }
    }
    cache.close().await?;
    Ok(exit::OK)
}

/// What this command has printed so far: every node as last printed, so that nothing is
/// printed twice or out of order (after an overflow the cache's events may repeat what a
/// snapshot showed) and a dropped stretch can be made up for.
struct Printed {
    json: bool,
    /// `--compressed`: gunzip the data before printing it.
    compressed: bool,
    nodes: BTreeMap<String, CachedNode>,
}

impl Printed {
    /// The lines for `event`.
    fn apply(&mut self, event: CacheEvent, cache: &Cache) -> Vec<String> {
        match event {
            CacheEvent::Created(node) | CacheEvent::Changed { new: node, .. } => self.upsert(node),
            CacheEvent::Deleted(node) => self.remove(&node.path).into_iter().collect(),
            CacheEvent::Initialized => vec![self.bare("initialized")],
            CacheEvent::Resynced { dropped } => {
                let mut lines = if dropped > 0 { self.catch_up(cache.snapshot()) } else { Vec::new() };
                lines.push(self.bare("resynced"));
                lines
            }
            _ => Vec::new(),
        }
    }

    /// `node` as created or changed, unless it is what was printed last for its path.
    fn upsert(&mut self, node: CachedNode) -> Vec<String> {
        let mut lines = Vec::new();
        let kind = match self.nodes.get(&node.path) {
            Some(old) if old.stat.czxid == node.stat.czxid && old.stat.mzxid >= node.stat.mzxid => return lines,
            Some(old) if old.stat.czxid == node.stat.czxid => "changed",
            Some(_) => {
                // another node of the same path: the old one went first
                lines.extend(self.remove(&node.path));
                "created"
            }
            None => "created",
        };
        lines.push(self.line(kind, &node));
        self.nodes.insert(node.path.clone(), node);
        lines
    }

    fn remove(&mut self, path: &str) -> Option<String> {
        let old = self.nodes.remove(path)?;
        Some(self.line("deleted", &CachedNode::new(old.path, None, old.stat)))
    }

    /// After dropped events: the differences between what was printed and `now`.
    fn catch_up(&mut self, now: BTreeMap<String, CachedNode>) -> Vec<String> {
        let gone: Vec<String> = self.nodes.keys().filter(|p| !now.contains_key(*p)).cloned().collect();
        let mut lines: Vec<String> = gone.iter().filter_map(|p| self.remove(p)).collect();
        for node in now.into_values() {
            lines.extend(self.upsert(node));
        }
        lines
    }

    fn bare(&self, event: &str) -> String {
        if self.json {
            json!({"event": event}).to_string()
        } else {
            event.to_string()
        }
    }

    fn line(&self, event: &str, node: &CachedNode) -> String {
        // with --compressed, data that is not gzip is printed as stored, with the reason
        let (stored, data_error) = match node.data.as_deref() {
            Some(bytes) if self.compressed => match GzipCompression::default().decompress(&node.path, bytes) {
                Ok(plain) => (Some(std::borrow::Cow::Owned(plain)), None),
                Err(e) => (Some(std::borrow::Cow::Borrowed(bytes)), Some(e.to_string())),
            },
            other => (other.map(std::borrow::Cow::Borrowed), None),
        };
        let data = stored.as_deref().map(|bytes| match std::str::from_utf8(bytes) {
            Ok(text) => ("data", text.to_string()),
            Err(_) => ("data_base64", base64::engine::general_purpose::STANDARD.encode(bytes)),
        });
        let stat = &node.stat;
        if self.json {
            let mut object = json!({"event": event, "path": node.path});
            if let Some((key, value)) = &data {
                object[*key] = json!(value);
            }
            if let Some(reason) = &data_error {
                object["data_error"] = json!(reason);
            }
            for (key, value) in [("version", i64::from(stat.version)), ("czxid", stat.czxid), ("mzxid", stat.mzxid)] {
                object[key] = json!(value);
            }
            object.to_string()
        } else {
            let mut line =
                format!("{event} {} version={} czxid={} mzxid={}", node.path, stat.version, stat.czxid, stat.mzxid);
            if let Some((key, value)) = data {
                line.push_str(&format!(" {key}={}", json!(value)));
            }
            if let Some(reason) = data_error {
                line.push_str(&format!(" data_error={}", json!(reason)));
            }
            line
        }
    }
}

#[cfg(test)]
mod tests {
    use zk_recipes::Stat;

    use super::*;

    fn node(path: &str, data: &[u8], czxid: i64, mzxid: i64, version: i32) -> CachedNode {
        let stat = Stat {
            czxid,
            mzxid,
            pzxid: czxid,
            ctime: 0,
            mtime: 0,
            version,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 0,
            data_length: data.len() as i32,
            num_children: 0,
        };
        CachedNode::new(path, Some(data.to_vec()), stat)
    }

    fn printed(json: bool) -> Printed {
        Printed { json, compressed: false, nodes: BTreeMap::new() }
    }

    #[test]
    fn json_lines_follow_the_contract() {
        let mut p = printed(true);
        assert_eq!(
            p.upsert(node("/a", b"x", 5, 5, 0)),
            [r#"{"event":"created","path":"/a","data":"x","version":0,"czxid":5,"mzxid":5}"#]
        );
        assert_eq!(
            p.upsert(node("/a", &[0xff, 0x00], 5, 9, 1)),
            [r#"{"event":"changed","path":"/a","data_base64":"/wA=","version":1,"czxid":5,"mzxid":9}"#]
        );
        assert_eq!(p.remove("/a").unwrap(), r#"{"event":"deleted","path":"/a","version":1,"czxid":5,"mzxid":9}"#);
        assert_eq!(p.bare("initialized"), r#"{"event":"initialized"}"#);
        let mut no_data = node("/b", b"", 7, 7, 0);
        no_data.data = None;
        assert_eq!(p.upsert(no_data), [r#"{"event":"created","path":"/b","version":0,"czxid":7,"mzxid":7}"#]);
    }

    #[test]
    fn text_lines_are_readable() {
        let mut p = printed(false);
        assert_eq!(
            p.upsert(node("/a", b"hi \"you\"", 5, 6, 1)),
            [r#"created /a version=1 czxid=5 mzxid=6 data="hi \"you\"""#]
        );
        assert_eq!(p.bare("resynced"), "resynced");
    }

    #[test]
    fn nothing_twice_nothing_backwards() {
        let mut p = printed(true);
        assert_eq!(p.upsert(node("/a", b"1", 5, 8, 1)).len(), 1);
        // an older or the same state of the same node is not printed again
        assert!(p.upsert(node("/a", b"0", 5, 5, 0)).is_empty());
        assert!(p.upsert(node("/a", b"1", 5, 8, 1)).is_empty());
        // a deletion of a node never printed prints nothing
        assert!(p.remove("/never").is_none());
        // the same path with another czxid: deleted, then created
        let lines = p.upsert(node("/a", b"1", 11, 11, 0));
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains(r#""event":"deleted""#) && lines[0].contains(r#""czxid":5"#));
        assert!(lines[1].contains(r#""event":"created""#) && lines[1].contains(r#""czxid":11"#));
    }

    #[test]
    fn catching_up_prints_exactly_the_differences() {
        let mut p = printed(true);
        for n in [node("/r", b"", 1, 1, 0), node("/r/gone", b"", 2, 2, 0), node("/r/same", b"s", 3, 3, 0)] {
            p.upsert(n);
        }
        p.upsert(node("/r/changed", b"a", 4, 4, 0));
        p.upsert(node("/r/recreated", b"same", 5, 5, 0));
        let now: BTreeMap<String, CachedNode> = [
            node("/r", b"", 1, 1, 0),
            node("/r/same", b"s", 3, 3, 0),
            node("/r/changed", b"b", 4, 12, 1),
            node("/r/recreated", b"same", 13, 13, 0),
            node("/r/new", b"n", 14, 14, 0),
        ]
        .into_iter()
        .map(|n| (n.path.clone(), n))
        .collect();
        let lines = p.catch_up(now.clone());
        let events: Vec<(String, String)> = lines
            .iter()
            .map(|l| {
                let event = l.split(r#""event":""#).nth(1).unwrap().split('"').next().unwrap().to_string();
                let path = l.split(r#""path":""#).nth(1).unwrap().split('"').next().unwrap().to_string();
                (event, path)
            })
            .collect();
        let expected = [
            ("deleted", "/r/gone"),
            ("changed", "/r/changed"),
            ("created", "/r/new"),
            ("deleted", "/r/recreated"),
            ("created", "/r/recreated"),
        ];
        assert_eq!(events, expected.map(|(e, p)| (e.to_string(), p.to_string())));
        assert_eq!(p.nodes, now, "what is printed is now the snapshot");
    }

    #[test]
    fn compressed_data_is_gunzipped_and_other_data_printed_with_the_reason() {
        let gz = zk_recipes::GzipCompression::default().compress("/z", b"hello").unwrap();
        let mut p = Printed { json: true, compressed: true, nodes: BTreeMap::new() };
        assert_eq!(
            p.upsert(node("/z", &gz, 5, 5, 0)),
            [r#"{"event":"created","path":"/z","data":"hello","version":0,"czxid":5,"mzxid":5}"#]
        );
        let line = p.upsert(node("/p", b"plain", 6, 6, 0)).remove(0);
        assert!(line.contains(r#""data":"plain""#) && line.contains(r#""data_error":"#), "{line}");
        p.json = false;
        let line = p.upsert(node("/q", b"x", 7, 7, 0)).remove(0);
        assert!(line.starts_with("created /q version=0") && line.contains(" data_error="), "{line}");
    }
}
