//! Unit tests of the demo tools (apart from `demo.rs`, which the client's in-process
//! tests include as it is).

use crate::demo::*;
use serde_json::json;

#[test]
fn every_demo_tool_lists_a_valid_object_schema() {
    for t in all() {
        let l = t.to_listing(true);
        assert_eq!(l["inputSchema"]["type"], "object", "{l}");
        mcp_tasks_testkit::schema::validate_def("Tool", &l).unwrap();
    }
}

#[test]
fn bounds_come_from_the_attributes() {
    let r = sleep()
        .check_arguments(&json!({"ms": MAX_MS + 1}))
        .unwrap_err();
    assert_eq!(
        r.first_text(),
        Some(
            "Invalid arguments for tool `sleep`: ms: 86400001 is greater than the maximum of 86400000"
        )
    );
    let r = progress()
        .check_arguments(&json!({"steps": -1, "ms": 1}))
        .unwrap_err();
    assert!(
        r.first_text()
            .unwrap()
            .contains("steps: -1 is less than the minimum of 0"),
        "{r:?}"
    );
    assert!(echo().check_arguments(&json!({"text": "a"})).is_ok());
    assert!(
        error()
            .check_arguments(&json!({"message": "m", "code": null}))
            .is_ok()
    );
}
