//! The bounds of the parked calls.

use super::*;

fn parking(owner: &str, bytes: usize) -> Parking {
    Parking {
        owner: owner.to_owned(),
        binding: format!("b-{owner}"),
        bytes,
    }
}

/// Park a fresh call of `owner` holding `bytes` under `handle`.
fn park(parked: &Parked, handle: &str, owner: &str, bytes: usize) -> Result<(), Full> {
    let call = Call::new(BTreeMap::new());
    parked.park(handle.to_owned(), parking(owner, bytes), call)
}

/// One requester fills its share of the table: its next call is not parked, and
/// another requester's call still is (and is found by its retry).
#[tokio::test]
async fn a_requester_past_its_share_leaves_room_for_the_others() {
    let parked = Parked::default();
    for i in 0..MAX_PARKED_PER_REQUESTER {
        assert_eq!(park(&parked, &format!("a{i}"), "principal:a", 10), Ok(()));
    }
    assert_eq!(park(&parked, "a-more", "principal:a", 10), Err(Full::Share));
    assert_eq!(park(&parked, "b0", "principal:b", 10), Ok(()));
    assert!(parked.take("b0", "b-principal:b").is_some());
    // The retry of a call that was not parked finds nothing (it re-runs).
    assert!(parked.take("a-more", "b-principal:a").is_none());
    // Taken out with another binding (caller, tool or arguments): not handed over.
    assert!(parked.take("a0", "b-principal:b").is_none());
    assert!(
        parked.take("a0", "b-principal:a").is_none(),
        "taken out above"
    );
    assert!(parked.take("a1", "b-principal:a").is_some());
}

/// Bytes count per requester and per server: a call over its requester's byte share
/// is not parked; past the server's total, nobody's is, until room is made.
#[tokio::test]
async fn bytes_past_the_share_or_the_total_are_not_parked() {
    let parked = Parked::default();
    assert_eq!(
        park(
            &parked,
            "big",
            "principal:big",
            MAX_PARKED_BYTES_PER_REQUESTER + 1
        ),
        Err(Full::Share)
    );
    let owners = MAX_PARKED_BYTES / MAX_PARKED_BYTES_PER_REQUESTER;
    for i in 0..owners {
        assert_eq!(
            park(
                &parked,
                &format!("h{i}"),
                &format!("principal:{i}"),
                MAX_PARKED_BYTES_PER_REQUESTER
            ),
            Ok(())
        );
    }
    assert_eq!(
        park(&parked, "late", "principal:late", 1),
        Err(Full::Server)
    );
    assert!(parked.take("h0", "b-principal:0").is_some());
    assert_eq!(park(&parked, "late", "principal:late", 1), Ok(()));
}

/// A parked call keeps no copy of its arguments: the handler sees the params without
/// them (and without the MRTR fields); empty `arguments` stay, as sent.
#[test]
fn the_handler_params_leave_out_the_arguments_it_already_has() {
    let params = json!({"name": "t", "arguments": {"a": 1}, "requestState": "s",
        "inputResponses": {}, "_meta": {"progressToken": 1}});
    assert_eq!(
        for_handler(params, &json!({"a": 1})),
        json!({"name": "t", "_meta": {"progressToken": 1}})
    );
    let params = json!({"name": "t", "arguments": {}});
    assert_eq!(for_handler(params.clone(), &json!({})), params);
}

/// A parked call stays no longer than [`PARK_TTL`]: past it its retry finds nothing (and
/// re-runs from its `requestState`), and the table holds nothing of it, even when no other
/// call is parked or taken meanwhile.
#[tokio::test(start_paused = true)]
async fn a_parked_call_is_dropped_at_its_expiry() {
    let parked = Parked::default();
    let call = Call::new(BTreeMap::new());
    let weak = Arc::downgrade(&call);
    assert_eq!(
        parked.park("x".into(), parking("principal:x", 10), call),
        Ok(())
    );
    tokio::time::sleep(PARK_TTL - Duration::from_secs(1)).await;
    assert_eq!(parked.len(), 1, "still parked before its expiry");
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Let the expiry task run.
    tokio::task::yield_now().await;
    assert_eq!(parked.len(), 0, "dropped at its expiry");
    assert!(weak.upgrade().is_none(), "nothing of the call is held");
    assert!(parked.take("x", "b-principal:x").is_none());
}
