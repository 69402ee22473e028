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

use std::net::{Ipv4Addr, TcpListener};

use crate::Result;

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
    use super::*;

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
