//! Rate limits across replicas: the `create` and `lookup-failures` buckets are shared
//! through the PostgreSQL store, so three replicas behind the round-robin proxy give a
//! principal its allowance once, not three times (`mcp_tasks_core::buckets`).

use serde_json::json;

use crate::replicas::Cluster;

/// Spec (security): "receivers SHOULD implement rate limiting on task operations to
/// prevent denial-of-service and enumeration attacks." `create=1/h,burst=5` over three
/// replicas: five creations pass, the next ten (on every replica) are 429; bob's bucket is
/// his own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_create_limit_holds_across_replicas() {
    let cluster = Cluster::start(&["--rate-limit", "create=1/h,burst=5"]).await;
    let mut alice = cluster.client("tok-alice");
    alice.initialize().await;
    let mut accepted = 0;
    let mut refused = 0;
    for _ in 0..15 {
        let (_, r) = alice
            .request(
                "tools/call",
                json!({"name": "sleep", "arguments": {"ms": 0}, "task": {}}),
            )
            .await;
        match r.status {
            200 => accepted += 1,
            429 => {
                let m = r.json().await;
                assert_eq!(m["error"]["code"], -32029, "{m}");
                assert_eq!(m["error"]["data"]["limit"], "create", "{m}");
                refused += 1;
            }
            other => panic!("status {other}: {r:?}"),
        }
    }
    assert_eq!(
        (accepted, refused),
        (5, 10),
        "the burst of 5 once across the three replicas"
    );
    let listed = alice.rpc("tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"].as_array().unwrap().len(), 5);
    let mut bob = cluster.client("tok-bob");
    bob.initialize().await;
    bob.start_task("sleep", json!({"ms": 0})).await;
}

/// `lookup-failures=1/h,burst=20` over three replicas: after about 20 lookups of unknown
/// task ids (the burst, plus at most one per other replica, which learns of the spent
/// bucket at its next failure, and the few in flight while the shared bucket is written
/// in the background), every lookup of alice's is refused on every replica; per replica
/// it was 3 x 20 = 60.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lookup_failures_limit_holds_across_replicas() {
    let cluster = Cluster::start(&["--rate-limit", "lookup-failures=1/h,burst=20"]).await;
    let mut alice = cluster.client("tok-alice");
    alice.initialize().await;
    let mut not_found = 0;
    let mut refused_in_a_row = 0;
    for i in 0..90 {
        let (_, r) = alice
            .request(
                "tasks/get",
                json!({"taskId": format!("00000000-0000-4000-8000-{i:012}")}),
            )
            .await;
        if r.status == 429 {
            refused_in_a_row += 1;
            continue;
        }
        assert_eq!(r.status, 200, "{r:?}");
        let m = r.json().await;
        assert_eq!(m["error"]["code"], -32602, "{m}");
        not_found += 1;
        refused_in_a_row = 0;
        // The shared bucket is written in the background: let it land, as a client's
        // round trips would.
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    eprintln!("{not_found} failed lookups admitted over three replicas (burst 20)");
    assert!(
        (20..=26).contains(&not_found),
        "the burst once, not per replica: {not_found} admitted"
    );
    assert!(
        refused_in_a_row >= 30,
        "then refused everywhere: {refused_in_a_row}"
    );
}
