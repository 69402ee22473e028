//! The peer's `group.*` commands: a Curator `GroupMember`.

use std::collections::BTreeMap;

use super::parse::{hex, parse_num, unhex, words};
use super::CuratorPeer;
use crate::{Error, Result};

impl CuratorPeer {
    /// `group.start`: joins the group at `path` as `member_id` with `data` (a Curator
    /// `GroupMember`: an ephemeral `path/member_id` kept by a `PersistentNode`, and a
    /// `PathChildrenCache` of `path`), kept as holder `hid` of client `cid`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `cid` has no client or `hid` is in use;
    /// [`Error::InvalidArgument`] for an argument with whitespace.
    pub async fn group_start(&self, cid: &str, hid: &str, path: &str, member_id: &str, data: &[u8]) -> Result<()> {
        self.call(&words(&["group.start", cid, hid, path, member_id, &hex(data)])?).await.map(drop)
    }

    /// `group.members`: the member's `getCurrentMembers()`, id → data (its own id always
    /// included, as Curator does).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no group member or the answer does not parse.
    pub async fn group_members(&self, cid: &str, hid: &str) -> Result<BTreeMap<String, Vec<u8>>> {
        parse_members(&self.call(&words(&["group.members", cid, hid])?).await?)
    }

    /// `group.set`: the member's `setThisData(data)`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no group member.
    pub async fn group_set(&self, cid: &str, hid: &str, data: &[u8]) -> Result<()> {
        self.call(&words(&["group.set", cid, hid, &hex(data)])?).await.map(drop)
    }

    /// `group.close`: leaves the group (its node is deleted) and forgets the holder.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no group member.
    pub async fn group_close(&self, cid: &str, hid: &str) -> Result<()> {
        self.call(&words(&["group.close", cid, hid])?).await.map(drop)
    }
}

/// `<n>` then `<id> <data>` per member.
fn parse_members(s: &str) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut it = s.split(' ');
    let n: usize = parse_num(it.next().unwrap_or_default())?;
    let rest: Vec<&str> = it.collect();
    if rest.len() != n * 2 {
        return Err(Error::Peer(format!("expected {n} members of 2 words, got {} words: {s:?}", rest.len())));
    }
    rest.chunks(2).map(|w| Ok((w[0].to_string(), unhex(w[1])?.unwrap_or_default()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_parse() {
        let got = parse_members("2 a 6869 b -").unwrap();
        assert_eq!(got.get("a").map(Vec::as_slice), Some(&b"hi"[..]));
        assert_eq!(got.get("b").map(Vec::as_slice), Some(&b""[..]));
        assert_eq!(parse_members("0").unwrap().len(), 0);
        assert!(parse_members("2 a 00").is_err());
    }
}
