//! A service that takes a lock, leads and watches a tree, exposing the library's metrics as
//! Prometheus text over HTTP (feature `metrics`, with metrics-exporter-prometheus).
//!
//! `cargo run --example metrics --features metrics -- [--port 9184] [--rounds 20] [--serve]`
//!
//! By default it takes the lock 20 times, prints what its own endpoint serves, and exits.
//! `--serve` keeps it running (scrape `http://127.0.0.1:<port>/metrics`) until killed. The port
//! comes from `--port`, else `$METRICS_PORT`, else a free one; the ensemble from `$ZK_CONNECT`,
//! else an embedded server. See docs/guide/observability.md for what each metric means.

mod service;

use std::error::Error;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let (_server, connect) = zk_recipes_testing::server_or_env().await?;
    let mut args = std::env::args().skip(1);
    let mut port: Option<u16> = std::env::var("METRICS_PORT").ok().map(|p| p.parse()).transpose()?;
    let (mut rounds, mut serve) = (20, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => port = Some(args.next().ok_or("--port needs a value")?.parse()?),
            "--rounds" => rounds = args.next().ok_or("--rounds needs a value")?.parse()?,
            "--serve" => serve = true,
            other => return Err(format!("unknown argument {other:?}").into()),
        }
    }
    let listen = match port {
        Some(port) => ([127, 0, 0, 1], port).into(),
        None => service::free_port()?,
    };
    let opts = service::Options {
        connect,
        listen,
        root: "/examples/metrics".into(),
        id: format!("instance-{}", std::process::id()),
        rounds,
        serve,
        expire: false,
    };
    service::run(opts).await?;
    // what a scrape shows after the rounds (the library's own series only)
    let text = service::scrape(listen).await?;
    for line in text.lines().filter(|l| l.starts_with("zk_recipes_") && !l.contains("quantile")) {
        println!("{line}");
    }
    Ok(())
}
