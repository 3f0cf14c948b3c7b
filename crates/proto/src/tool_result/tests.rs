//! Unit tests of `tool_result`.

use super::*;
use mcp_tasks_testkit::schema::validate_def;
use serde_json::json;

fn round_trip(v: &Value) -> CallToolResult {
    let r = CallToolResult::from_value(v).unwrap();
    assert_eq!(&r.to_value(), v, "round trip of {v}");
    r
}

#[test]
fn every_block_type_round_trips_and_is_schema_valid() {
    let v = json!({
        "content": [
            {"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 1}, "_meta": {"k": 1}},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "audio", "data": "aGk=", "mimeType": "audio/wav", "annotations": {"priority": 0.5, "lastModified": "2025-01-12T15:00:58Z"}},
            {"type": "resource_link", "uri": "file:///a", "name": "a", "title": "A", "size": 3, "icons": [{"src": "https://x.invalid/i.png"}]},
            {"type": "resource", "resource": {"uri": "file:///b", "text": "b", "mimeType": "text/plain"}},
            {"type": "resource", "resource": {"uri": "file:///c", "blob": "YmxvYg==", "_meta": {"m": true}}}
        ],
        "structuredContent": {"temp": 21},
        "isError": true,
        "_meta": {"x": "y"},
        "future": [1, 2]
    });
    validate_def("CallToolResult", &v).unwrap();
    let r = round_trip(&v);
    assert!(r.is_error);
    assert_eq!(r.first_text(), Some("hi"));
    assert!(matches!(r.content[1], ContentBlock::Image(_)));
    assert!(matches!(r.content[2], ContentBlock::Audio(_)));
    assert!(matches!(r.content[3], ContentBlock::ResourceLink(_)));
    assert!(matches!(
        &r.content[5],
        ContentBlock::Resource(EmbeddedResource {
            resource: ResourceContents::Blob { .. },
            ..
        })
    ));
    assert_eq!(r.extra["future"], json!([1, 2]));
}

#[test]
fn unknown_block_type_is_kept_raw() {
    let v = json!({"content": [{"type": "hologram", "frames": 3}, {"type": "text", "text": "t"}]});
    let r = round_trip(&v);
    assert_eq!(
        r.content[0],
        ContentBlock::Unknown(json!({"type": "hologram", "frames": 3}))
    );
}

#[test]
fn invalid_results_are_rejected() {
    for bad in [
        json!({}),
        json!({"content": {}}),
        json!({"content": [{"type": "text"}]}),
        json!({"content": [{"type": "image", "data": "x"}]}),
        json!({"content": [{"text": "no type"}]}),
        json!({"content": ["a string"]}),
        json!({"content": [], "isError": "yes"}),
        json!({"content": [], "structuredContent": [1]}),
        json!([]),
    ] {
        let e = CallToolResult::from_value(&bad);
        assert!(e.is_err(), "{bad} parsed: {e:?}");
        assert!(validate_def("CallToolResult", &bad).is_err(), "{bad}");
    }
    let e = CallToolResult::from_value(&json!({"content": [{"type": "text"}]}))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`text` content block") && e.contains("text"),
        "{e}"
    );
}

#[test]
fn is_error_is_written_only_when_true() {
    let r = CallToolResult::from_value(&json!({"content": [], "isError": false})).unwrap();
    assert!(!r.is_error);
    assert_eq!(r.to_value(), json!({"content": []}));
    assert_eq!(
        CallToolResult::error("boom").to_value(),
        json!({"content": [{"type": "text", "text": "boom"}], "isError": true})
    );
}

#[test]
fn constructors_build_schema_valid_results() {
    let mut m = Map::new();
    m.insert("temp".into(), json!(21));
    let all = [
        CallToolResult::text("a"),
        CallToolResult::error("b"),
        CallToolResult::structured(m.clone()),
        CallToolResult::try_structured(&json!({"a": [1]})).unwrap(),
        CallToolResult::default()
            .with_content(ContentBlock::image("aGk=", "image/png"))
            .with_content(ContentBlock::audio("aGk=", "audio/wav"))
            .with_content(ContentBlock::resource_link("file:///a", "a"))
            .with_content(ContentBlock::embedded_text("file:///b", "b"))
            .with_structured_content(m.clone())
            .with_meta("k", json!("v"))
            .with_error(true),
        "from str".into(),
        String::from("from string").into(),
    ];
    for r in &all {
        let v = r.to_value();
        validate_def("CallToolResult", &v).unwrap_or_else(|e| panic!("{v}: {e}"));
        assert_eq!(&CallToolResult::from_value(&v).unwrap(), r);
    }
    let s = CallToolResult::structured(m);
    assert_eq!(
        s.to_value(),
        json!({"content": [{"type": "text", "text": "{\"temp\":21}"}], "structuredContent": {"temp": 21}})
    );
    assert!(CallToolResult::try_structured(&3).is_err());
}
