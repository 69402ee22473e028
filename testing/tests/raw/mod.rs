//! Writes and reads through a plain `zookeeper-client` client: what the kit's servers hold,
//! seen without the library.

use zookeeper_client::{Acls, Client, CreateMode};

/// Creates a persistent node, open to anyone.
pub async fn create(connect_string: &str, path: &str, data: &[u8]) {
    let client = Client::connect(connect_string).await.expect("connect");
    client.create(path, data, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await.expect("create");
}

/// The node's data.
pub async fn read(connect_string: &str, path: &str) -> Vec<u8> {
    let client = Client::connect(connect_string).await.expect("connect");
    client.get_data(path).await.expect("get_data").0
}
