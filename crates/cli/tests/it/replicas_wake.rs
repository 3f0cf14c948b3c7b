//! A measurement, not a check (ignored by default; `cargo nextest run -p mcp-tasks --test
//! it --run-ignored only -E 'test(cross_replica)'`): how soon a `tasks/result` waiting on
//! replica B answers after replica A finished the task, both on one PostgreSQL database.
//! A client of one principal holds a session on each replica (bearer token), creates a
//! `sleep 100 ms` task on A and at once asks B for its result. Prints, over `WAKE_N`
//! rounds (default 200): the lateness (arrival − (creation sent + 100 ms), as `mcp-tasks
//! bench -s result-wait` counts it) and the delay after the completion A stored
//! (arrival − the task's `lastUpdatedAt`, millisecond resolution). docs/performance.md
//! quotes them.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::http_common::{Client, Server, TOKENS_ENV};
use crate::replicas_failover::PgDb;

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

fn ms_since_epoch(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64() * 1000.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; prints figures"]
async fn cross_replica_result_wake() {
    let n: usize = std::env::var("WAKE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let db = PgDb::new("wake");
    let url = db.url("pool=4");
    let env = [(TOKENS_ENV, "tok-main main")];
    let a = Server::start_env(&["--store", &url], &env);
    let b = Server::start_env(&["--store", &url], &env);
    let mut on_a = Client::new(&a).with_token("tok-main");
    on_a.initialize().await;
    let mut on_b = Client::new(&b).with_token("tok-main");
    on_b.initialize().await;
    let (mut late, mut after) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let t0 = Instant::now();
        let id = on_a.start_task("sleep", json!({ "ms": 100 })).await;
        let (_, resp) = on_b.request("tasks/result", json!({ "taskId": id })).await;
        let sse = resp.is_sse();
        let body = if sse {
            let mut s = resp.sse();
            let events = s.until_response().await;
            format!("{events:?}")
        } else {
            String::from_utf8_lossy(&resp.bytes().await).into_owned()
        };
        let arrived = SystemTime::now();
        let took = t0.elapsed();
        assert!(body.contains("slept 100"), "{body}");
        late.push((took.as_secs_f64() * 1000.0) - 100.0);
        let t = on_b.task(&id).await;
        let done =
            humantime::parse_rfc3339_weak(t["result"]["lastUpdatedAt"].as_str().unwrap()).unwrap();
        after.push(ms_since_epoch(arrived) - ms_since_epoch(done));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!(
        "cross-replica tasks/result, {n} rounds: lateness p50 {:.2} ms, p90 {:.2}, p99 {:.2}; \
         after the stored completion p50 {:.2} ms, p90 {:.2}, p99 {:.2}",
        pct(&mut late, 0.5),
        pct(&mut late, 0.9),
        pct(&mut late, 0.99),
        pct(&mut after, 0.5),
        pct(&mut after, 0.9),
        pct(&mut after, 0.99)
    );
}
