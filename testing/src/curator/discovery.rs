//! The peer's `discovery.*` commands: curator-x-discovery's `ServiceDiscovery` and
//! `ServiceCache` (payload class `Object`, Curator's `JsonInstanceSerializer`).

use super::parse::{hex, parse_num, unhex, words};
use super::CuratorPeer;
use crate::{Error, Result};

impl CuratorPeer {
    /// `discovery.start`: a started Curator `ServiceDiscovery` at `base`, kept as holder `hid`
    /// of client `cid`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `cid` has no client or `hid` is in use;
    /// [`Error::InvalidArgument`] for an argument with whitespace.
    pub async fn discovery_start(&self, cid: &str, hid: &str, base: &str) -> Result<()> {
        self.call(&words(&["discovery.start", cid, hid, base])?).await.map(drop)
    }

    /// `discovery.register`: `registerService` of an instance with this name, id, address,
    /// port, SSL port, the URI spec `{scheme}://{address}:{port}` and `payload_json` read by
    /// Jackson as an `Object` (a JSON object becomes a `LinkedHashMap`).
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no service discovery or Curator refuses.
    #[allow(clippy::too_many_arguments)]
    pub async fn discovery_register(
        &self,
        cid: &str,
        hid: &str,
        name: &str,
        id: &str,
        address: &str,
        port: u16,
        ssl_port: Option<u16>,
        payload_json: Option<&str>,
    ) -> Result<()> {
        let ssl = ssl_port.map_or("-".to_string(), |p| p.to_string());
        let payload = payload_json.map_or("-".to_string(), |p| hex(p.as_bytes()));
        let args = ["discovery.register", cid, hid, name, id, address, &port.to_string(), &ssl, &payload];
        self.call(&words(&args)?).await.map(drop)
    }

    /// `discovery.unregister`: `unregisterService` of instance `id` of `name`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no service discovery.
    pub async fn discovery_unregister(&self, cid: &str, hid: &str, name: &str, id: &str) -> Result<()> {
        self.call(&words(&["discovery.unregister", cid, hid, name, id])?).await.map(drop)
    }

    /// `discovery.instances`: `queryForInstances(name)`, each as the JSON Curator's serializer
    /// writes for it, sorted by id.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no service discovery, Curator cannot read an instance,
    /// or the answer does not parse.
    pub async fn discovery_instances(&self, cid: &str, hid: &str, name: &str) -> Result<Vec<String>> {
        parse_json_list(&self.call(&words(&["discovery.instances", cid, hid, name])?).await?)
    }

    /// `discovery.names`: `queryForNames()`, sorted.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no service discovery.
    pub async fn discovery_names(&self, cid: &str, hid: &str) -> Result<Vec<String>> {
        let answer = self.call(&words(&["discovery.names", cid, hid])?).await?;
        let mut it = answer.split(' ');
        let _n: usize = parse_num(it.next().unwrap_or_default())?;
        Ok(it.map(str::to_string).collect())
    }

    /// `discovery.cache.start`: a started `ServiceCache` of service `name`, made by the
    /// service discovery `hid`, kept as holder `cache_hid`.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` has no service discovery or `cache_hid` is in use.
    pub async fn discovery_cache_start(&self, cid: &str, hid: &str, cache_hid: &str, name: &str) -> Result<()> {
        self.call(&words(&["discovery.cache.start", cid, hid, cache_hid, name])?).await.map(drop)
    }

    /// `discovery.cache.instances`: the `ServiceCache`'s `getInstances()`, each as Curator's
    /// JSON, sorted by id.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `cache_hid` has no service cache.
    pub async fn discovery_cache_instances(&self, cid: &str, cache_hid: &str) -> Result<Vec<String>> {
        parse_json_list(&self.call(&words(&["discovery.cache.instances", cid, cache_hid])?).await?)
    }

    /// `discovery.close`: closes a service discovery (unregistering its instances) or a
    /// service cache, and forgets the holder.
    ///
    /// # Errors
    ///
    /// [`Error::Peer`] when `hid` holds neither.
    pub async fn discovery_close(&self, cid: &str, hid: &str) -> Result<()> {
        self.call(&words(&["discovery.close", cid, hid])?).await.map(drop)
    }
}

/// `<n>` then `<hexJson>` per instance.
fn parse_json_list(s: &str) -> Result<Vec<String>> {
    let mut it = s.split(' ');
    let n: usize = parse_num(it.next().unwrap_or_default())?;
    let rest: Vec<&str> = it.collect();
    if rest.len() != n {
        return Err(Error::Peer(format!("expected {n} instances, got {}: {s:?}", rest.len())));
    }
    rest.iter()
        .map(|h| {
            let bytes = unhex(h)?.unwrap_or_default();
            String::from_utf8(bytes).map_err(|e| Error::Peer(format!("instance JSON is not UTF-8: {e}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lists_parse() {
        assert_eq!(parse_json_list("1 7b7d").unwrap(), vec!["{}".to_string()]);
        assert_eq!(parse_json_list("0").unwrap(), Vec::<String>::new());
        assert!(parse_json_list("2 7b7d").is_err());
    }
}
