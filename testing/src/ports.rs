//! Picking free TCP ports on 127.0.0.1 for test servers.
//!
//! Ports are chosen *below* the kernel's ephemeral range (`ip_local_port_range`, usually
//! 32768-60999) and checked by binding them. Ports the kernel hands out for port 0 come from
//! that ephemeral range, which is also where every outgoing connection of the test process gets
//! its local port: a server restarted on "its" port could then find it taken by one of the
//! test's own client connections. Below the range no outgoing connection can collide. If
//! nothing free is found there, binding port 0 is the fallback.
//!
//! A port is released before the server binds it, so another process may take it in between;
//! the server then fails to start and the kit retries with new ports.

use std::future::Future;
use std::net::{Ipv4Addr, TcpListener};

use crate::{Error, Result};

/// How many times a start is tried on new ports after a port was taken meanwhile.
const PORT_ATTEMPTS: usize = 3;

/// A failed start attempt, and whether it failed because one of its ports was taken meanwhile
/// (the only failure worth another attempt on other ports).
pub(crate) struct StartFailure {
    pub(crate) error: Error,
    pub(crate) port_clash: bool,
}

impl From<Error> for StartFailure {
    fn from(error: Error) -> Self {
        StartFailure { error, port_clash: false }
    }
}

/// Starts something on `n` ports: `fixed` ones if given (tried once), else free ones picked
/// anew for each attempt, with another attempt (at most [`PORT_ATTEMPTS`] in all) when
/// `start` reports a port clash. The one place where the kit retries a start.
pub(crate) async fn on_free_ports<T, F, Fut>(n: usize, fixed: Option<Vec<u16>>, mut start: F) -> Result<T>
where
    F: FnMut(Vec<u16>) -> Fut,
    Fut: Future<Output = std::result::Result<T, StartFailure>>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        let ports = match &fixed {
            Some(ports) => ports.clone(),
            None => free_ports(n)?,
        };
        match start(ports).await {
            Ok(started) => return Ok(started),
            Err(StartFailure { error, port_clash: true }) if fixed.is_none() && attempt < PORT_ATTEMPTS => {
                tracing::debug!(%error, attempt, "a port was taken meanwhile; retrying on other ports");
            }
            Err(failure) => return Err(failure.error),
        }
    }
}

/// Lowest port tried; below it live well-known services.
const LOW: u16 = 10_000;

/// Picks `n` distinct free ports on 127.0.0.1.
///
/// # Errors
/// [`Error::Io`](crate::Error::Io) when the kernel refuses even an ephemeral port.
pub(crate) fn free_ports(n: usize) -> Result<Vec<u16>> {
    let high = ephemeral_start().max(LOW + 1000);
    // Hold every listener until all are picked so that the ports are distinct.
    let mut held: Vec<TcpListener> = Vec::with_capacity(n);
    let mut attempts = 0;
    while held.len() < n && attempts < 100 * n {
        attempts += 1;
        let port = fastrand::u16(LOW..high);
        if let Ok(listener) = TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
            held.push(listener);
        }
    }
    while held.len() < n {
        held.push(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?);
    }
    held.iter().map(|l| Ok(l.local_addr()?.port())).collect::<Result<Vec<u16>>>()
}

/// First port of the kernel's ephemeral range (32768 when it cannot be read).
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn clash() -> StartFailure {
        StartFailure { error: Error::io("taken"), port_clash: true }
    }

    #[tokio::test]
    async fn a_clash_is_retried_on_new_ports_a_bounded_number_of_times() {
        let calls = AtomicUsize::new(0);
        let started = on_free_ports(2, None, |ports| {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                assert_eq!(ports.len(), 2);
                if call == 0 {
                    Err(clash())
                } else {
                    Ok(ports)
                }
            }
        })
        .await;
        assert!(started.is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 2);

        calls.store(0, Ordering::SeqCst);
        let always: Result<()> = on_free_ports(1, None, |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(clash()) }
        })
        .await;
        assert!(matches!(&always, Err(Error::Io { message, .. }) if message == "taken"), "{always:?}");
        assert_eq!(calls.load(Ordering::SeqCst), PORT_ATTEMPTS);
    }

    #[tokio::test]
    async fn fixed_ports_and_other_failures_are_not_retried() {
        let calls = AtomicUsize::new(0);
        let fixed: Result<()> = on_free_ports(1, Some(vec![7]), |ports| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move {
                assert_eq!(ports, vec![7]);
                Err(clash())
            }
        })
        .await;
        assert!(fixed.is_err());
        let other: Result<()> = on_free_ports(1, None, |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(Error::io("broken").into()) }
        })
        .await;
        assert!(matches!(&other, Err(Error::Io { message, .. }) if message == "broken"), "{other:?}");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn ports_are_distinct_and_free() {
        let ports = free_ports(9).expect("ports");
        let mut sorted = ports.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 9);
        for port in ports {
            TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("released port is free");
        }
    }
}
