//! A cluster's private Docker network. Dropping it removes it (after its containers: every
//! member holds it, and drops it after removing its own container).

use std::collections::HashMap;
use std::time::Duration;

use testcontainers::bollard::models::NetworkCreateRequest;
use tokio::time::Instant;

use super::runtime::{block, docker, run, spawn};
use crate::{Error, Result};

/// How long a network still in use is tried again, and how often; for how long of that the
/// drop itself waits.
const RETRY_FOR: Duration = Duration::from_secs(60);
const RETRY_EVERY: Duration = Duration::from_millis(250);
const WAIT_IN_DROP: Duration = Duration::from_secs(5);

/// A user-defined bridge network, on which the containers find each other by name.
#[derive(Debug)]
pub(crate) struct Network {
    name: String,
}

impl Network {
    /// Creates the network `name` with `labels`.
    pub async fn create(name: String, labels: Vec<(String, String)>) -> Result<Network> {
        let request = NetworkCreateRequest {
            name: name.clone(),
            driver: Some("bridge".into()),
            labels: Some(labels.into_iter().collect::<HashMap<_, _>>()),
            ..Default::default()
        };
        run(async move {
            let docker = docker().await?;
            docker.create_network(request).await.map_err(|e| Error::Docker(format!("network create: {e}")))
        })
        .await?;
        Ok(Network { name })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

async fn remove(name: String) -> Result<()> {
    let docker = docker().await?;
    docker.remove_network(&name).await.map_err(|e| Error::Docker(format!("network rm {name}: {e}")))
}

impl Drop for Network {
    fn drop(&mut self) {
        // Under load the engine may still be releasing the endpoints of the containers just
        // removed: try again for a few seconds, so that the network is gone when the drop
        // returns (seen on a busy 2-core machine: one network outlived its cluster's drop).
        let waited_until = std::time::Instant::now() + WAIT_IN_DROP;
        loop {
            if block(remove(self.name.clone())).is_ok() {
                return;
            }
            if std::time::Instant::now() >= waited_until {
                break;
            }
            std::thread::sleep(RETRY_EVERY);
        }
        // Still in use: containers of a start that was given up on are being created or removed
        // on the kit's runtime. Try again once they are gone, without waiting for it here.
        let name = self.name.clone();
        spawn(async move {
            let deadline = Instant::now() + RETRY_FOR;
            loop {
                tokio::time::sleep(RETRY_EVERY).await;
                match remove(name.clone()).await {
                    Ok(()) => return,
                    Err(e) if Instant::now() >= deadline => {
                        tracing::warn!(network = %name, error = %e, "could not remove a test network");
                        return;
                    }
                    Err(_) => {}
                }
            }
        });
    }
}
