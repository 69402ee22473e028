//! Draws `bench/results.svg` from `bench/out/results.jsonl` (the lines `zkr bench` and the
//! peers print): one panel per recipe, median ops/s per client count and peer.
//!
//! `cargo run --release --example bench_chart -- bench/out/results.jsonl bench/results.svg`
//! Without arguments it draws a small built-in sample to a temporary file (a self-check).

use std::collections::BTreeMap;
use std::fmt::Write as _;

const PEERS: [(&str, &str); 4] =
    [("zk-recipes", "#1b9e77"), ("zookeeper-client", "#7570b3"), ("curator", "#d95f02"), ("kazoo", "#e7298a")];

/// The value of `"key":` in a flat JSON object line (numbers and strings only).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &line[at..];
    if let Some(s) = rest.strip_prefix('"') {
        return s.split('"').next();
    }
    rest.split([',', '}']).next().map(str::trim)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (input, output) = match args.as_slice() {
        [i, o] => (std::fs::read_to_string(i)?, o.clone()),
        [] => (SAMPLE.to_string(), std::env::temp_dir().join("zk-recipes-chart-sample.svg").display().to_string()),
        _ => return Err("usage: bench_chart RESULTS.jsonl OUT.svg".into()),
    };
    // recipe -> clients -> peer -> ops/s samples
    let mut data: BTreeMap<String, BTreeMap<u32, BTreeMap<String, Vec<f64>>>> = BTreeMap::new();
    for line in input.lines().filter(|l| l.trim_start().starts_with('{')) {
        let (Some(peer), Some(recipe), Some(clients), Some(ops)) =
            (field(line, "peer"), field(line, "recipe"), field(line, "clients"), field(line, "ops_per_s"))
        else {
            continue;
        };
        let (Ok(clients), Ok(ops)) = (clients.parse::<u32>(), ops.parse::<f64>()) else { continue };
        if matches!(recipe, "drain" | "waiters_memory") {
            continue;
        }
        data.entry(recipe.into()).or_default().entry(clients).or_default().entry(peer.into()).or_default().push(ops);
    }
    let svg = draw(&data);
    std::fs::write(&output, svg)?;
    eprintln!("wrote {output} ({} recipes)", data.len());
    Ok(())
}

fn draw(data: &BTreeMap<String, BTreeMap<u32, BTreeMap<String, Vec<f64>>>>) -> String {
    let (pw, ph, cols) = (300.0, 200.0, 3usize);
    let rows = data.len().div_ceil(cols).max(1);
    let (w, h) = (pw * cols as f64 + 20.0, ph * rows as f64 + 70.0);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/><text x="10" y="20" font-size="15">Operations per second, median (higher is better)</text>"#
    );
    for (i, (name, color)) in PEERS.iter().enumerate() {
        let x = 10.0 + i as f64 * 130.0;
        let _ = write!(
            s,
            r#"<rect x="{x}" y="32" width="12" height="12" fill="{color}"/><text x="{}" y="42">{name}</text>"#,
            x + 16.0
        );
    }
    for (k, (recipe, by_clients)) in data.iter().enumerate() {
        let (ox, oy) = (10.0 + (k % cols) as f64 * pw, 60.0 + (k / cols) as f64 * ph);
        let max = by_clients.values().flat_map(|p| p.values().map(|v| median(v.clone()))).fold(1.0, f64::max);
        let _ = write!(s, r#"<text x="{}" y="{}" font-size="13">{recipe}</text>"#, ox + 4.0, oy + 14.0);
        let (bx, by, bw, bh) = (ox + 40.0, oy + 24.0, pw - 60.0, ph - 60.0);
        let _ = write!(s, r##"<line x1="{bx}" y1="{}" x2="{}" y2="{}" stroke="#999"/>"##, by + bh, bx + bw, by + bh);
        let _ = write!(s, r#"<text x="{}" y="{}" text-anchor="end">{:.0}</text>"#, bx - 4.0, by + 8.0, max);
        let groups = by_clients.len().max(1) as f64;
        for (g, (clients, peers)) in by_clients.iter().enumerate() {
            let gx = bx + g as f64 * bw / groups;
            let slot = bw / groups / (PEERS.len() as f64 + 1.0);
            for (p, (peer, color)) in PEERS.iter().enumerate() {
                let Some(v) = peers.get(*peer) else { continue };
                let value = median(v.clone());
                let height = bh * value / max;
                let x = gx + slot * (p as f64 + 0.5);
                let _ = write!(
                    s,
                    r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{height:.1}" fill="{color}"><title>{peer}, {clients} clients: {value:.0} ops/s</title></rect>"#,
                    by + bh - height,
                    slot * 0.9
                );
            }
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{clients} cl.</text>"#,
                gx + bw / groups / 2.0,
                by + bh + 14.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

const SAMPLE: &str = r#"{"peer":"zk-recipes","recipe":"mutex","clients":1,"seconds":5,"ops":5000,"ops_per_s":1000,"p50_ms":1,"p99_ms":2,"violations":0,"errors":0}
{"peer":"curator","recipe":"mutex","clients":1,"seconds":5,"ops":4000,"ops_per_s":800,"p50_ms":1,"p99_ms":2,"violations":0,"errors":0}
{"peer":"zk-recipes","recipe":"mutex","clients":4,"seconds":5,"ops":5000,"ops_per_s":1000,"p50_ms":1,"p99_ms":2,"violations":0,"errors":0}
"#;
