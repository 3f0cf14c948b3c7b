//! `mcp-tasks bench --compare-metrics`: what `/metrics` costs. The same workload runs
//! against two servers this binary starts on loopback, one with `--no-metrics` and one
//! with metrics on (and scraped every [`SCRAPE_EVERY`], far more often than Prometheus'
//! default 15 s), for `--rounds` rounds in alternating order; the report gives both
//! throughputs of each round and the median ratio on/off.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, anyhow};
use mcp_tasks_bench::{Config, Endpoint};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How often the server with metrics on is scraped during its run.
pub(crate) const SCRAPE_EVERY: Duration = Duration::from_secs(1);
/// How long a spawned server may take to say where it listens.
const START_WITHIN: Duration = Duration::from_secs(30);

/// One `mcp-tasks serve` on a free loopback port; killed on drop.
struct Spawned {
    child: Child,
    url: String,
    addr: SocketAddr,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_server(metrics: bool, serve_args: &[String]) -> anyhow::Result<Spawned> {
    let exe = std::env::current_exe().context("cannot find this program to start servers")?;
    let mut cmd = Command::new(exe);
    cmd.args(["serve", "--listen", "127.0.0.1:0"]);
    if !serve_args.iter().any(|a| a == "--store") {
        cmd.args(["--store", "memory"]);
    }
    if !metrics {
        cmd.arg("--no-metrics");
    }
    cmd.args(serve_args)
        // Logs would cost more than what is measured.
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().context("cannot start `mcp-tasks serve`")?;
    let stderr = child.stderr.take().context("no stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    // Reads stderr to its end, so that the server never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("listening on ")
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(url.trim().to_owned());
            } else if tx.is_some() {
                eprintln!("[server] {line}");
            }
        }
    });
    let mut spawned = Spawned {
        child,
        url: String::new(),
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
    };
    let url = rx
        .recv_timeout(START_WITHIN)
        .map_err(|_| anyhow!("the server did not say where it listens within {START_WITHIN:?}"))?;
    let authority = url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .ok_or_else(|| anyhow!("unexpected server URL {url}"))?;
    spawned.addr = authority
        .parse()
        .with_context(|| format!("unexpected server address {authority}"))?;
    spawned.url = url;
    Ok(spawned)
}

/// `GET /metrics` on `addr`, read to the end; its status line.
async fn scrape(addr: SocketAddr) -> std::io::Result<String> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await?;
    let mut body = Vec::new();
    s.read_to_end(&mut body).await?;
    let text = String::from_utf8_lossy(&body);
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

/// One round's figures.
#[derive(Debug, Serialize)]
struct Round {
    metrics_off: f64,
    metrics_on: f64,
    ratio: f64,
}

/// The whole comparison, as printed with `--json`.
#[derive(Debug, Serialize)]
struct Comparison {
    tool: &'static str,
    scenario: String,
    figure: String,
    unit: String,
    concurrency: usize,
    duration_s: f64,
    scrape_every_s: f64,
    scrapes: u64,
    rounds: Vec<Round>,
    median_ratio: f64,
    cost_percent: f64,
    errors: u64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        f64::midpoint(v[n / 2 - 1], v[n / 2])
    }
}

/// One run of `cfg`'s workload against a fresh server; with metrics on, `/metrics` is
/// scraped every [`SCRAPE_EVERY`] meanwhile (every scrape must answer 200).
async fn one_run(
    cfg: &Config,
    metrics: bool,
    serve_args: &[String],
    token: Option<String>,
    scrapes: &mut u64,
) -> anyhow::Result<mcp_tasks_bench::Report> {
    let server = spawn_server(metrics, serve_args)?;
    let mut cfg = cfg.clone();
    cfg.endpoint = Endpoint::parse(&server.url, token).map_err(anyhow::Error::msg)?;
    cfg.server_pid = Some(server.child.id());
    let counted = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let scraper = metrics.then(|| {
        let addr = server.addr;
        let counted = std::sync::Arc::clone(&counted);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SCRAPE_EVERY);
            loop {
                tick.tick().await;
                match scrape(addr).await {
                    Ok(status) if status.contains(" 200") => {
                        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Ok(status) => return anyhow!("GET /metrics answered {status}"),
                    Err(e) => return anyhow!("GET /metrics failed: {e}"),
                }
            }
        })
    });
    let report = mcp_tasks_bench::run(cfg).await;
    if let Some(s) = scraper {
        if s.is_finished() {
            return Err(s.await?);
        }
        s.abort();
    }
    *scrapes += counted.load(std::sync::atomic::Ordering::Relaxed);
    drop(server);
    Ok(report?)
}

/// Run the comparison; `Ok(false)` when a run saw errors.
pub(crate) async fn run(
    cfg: Config,
    rounds: usize,
    serve_args: &[String],
    token: Option<String>,
    json: bool,
) -> anyhow::Result<bool> {
    let rounds = rounds.max(1);
    let mut out = Comparison {
        tool: "mcp-tasks bench --compare-metrics",
        scenario: String::new(),
        figure: String::new(),
        unit: String::new(),
        concurrency: cfg.concurrency,
        duration_s: cfg.length.duration.as_secs_f64(),
        scrape_every_s: SCRAPE_EVERY.as_secs_f64(),
        scrapes: 0,
        rounds: Vec::new(),
        median_ratio: f64::NAN,
        cost_percent: f64::NAN,
        errors: 0,
    };
    for i in 0..rounds {
        // Alternate which goes first, so that a drift of the machine does not favour one.
        let order = if i % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        let (mut off, mut on) = (0.0, 0.0);
        for metrics in order {
            let mut scrapes = 0;
            let r = one_run(&cfg, metrics, serve_args, token.clone(), &mut scrapes).await?;
            out.scrapes += scrapes;
            out.errors += r.errors.total;
            out.scenario.clone_from(&r.scenario);
            out.figure.clone_from(&r.figure.name);
            out.unit.clone_from(&r.figure.unit);
            if metrics {
                on = r.figure.value;
            } else {
                off = r.figure.value;
            }
        }
        let round = Round {
            metrics_off: off,
            metrics_on: on,
            ratio: if off > 0.0 { on / off } else { f64::NAN },
        };
        if !json {
            eprintln!(
                "round {}: metrics off {off:.1} {u}, on {on:.1} {u}, on/off {:.3}",
                i + 1,
                round.ratio,
                u = out.unit
            );
        }
        out.rounds.push(round);
    }
    out.median_ratio = median(out.rounds.iter().map(|r| r.ratio).collect());
    out.cost_percent = (1.0 - out.median_ratio) * 100.0;
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "{} ({}), {} clients, {} s per run, {} rounds",
            out.scenario,
            out.figure,
            out.concurrency,
            out.duration_s,
            out.rounds.len()
        );
        for (i, r) in out.rounds.iter().enumerate() {
            println!(
                "  round {}: --no-metrics {:>10.1}  metrics on {:>10.1}  on/off {:.3}",
                i + 1,
                r.metrics_off,
                r.metrics_on,
                r.ratio
            );
        }
        println!(
            "median on/off {:.3}: metrics cost {:.1} % of throughput (scraped every {} s)",
            out.median_ratio, out.cost_percent, out.scrape_every_s
        );
        if out.errors > 0 {
            println!("errors: {}", out.errors);
        }
    }
    Ok(out.errors == 0)
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert!((median(vec![3.0, 1.0, 2.0]) - 2.0).abs() < 1e-9);
        assert!((median(vec![4.0, 1.0, 2.0, 3.0]) - 2.5).abs() < 1e-9);
        assert!(median(Vec::new()).is_nan());
    }
}
