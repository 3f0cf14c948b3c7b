//! W3C Trace Context carried by a request: `_meta.traceparent` / `_meta.tracestate`
//! (and, over Streamable HTTP, the `traceparent` / `tracestate` headers).
//!
//! Spec (2026-07-28, basic, `_meta`): "the keys `traceparent`, `tracestate`, and `baggage`
//! are reserved for OpenTelemetry trace context propagation. When present, their values
//! MUST follow W3C Trace Context and W3C Baggage formats respectively."
//!
//! A receiver only reads them: a value that does not follow the format is ignored (never
//! an error), as W3C Trace Context asks of a receiver that cannot parse `traceparent`
//! ("the vendor MUST ignore the traceparent").

use serde_json::Value;

/// The `_meta` key (and HTTP header) of the trace parent.
pub const TRACEPARENT: &str = "traceparent";
/// The `_meta` key (and HTTP header) of the vendor trace state.
pub const TRACESTATE: &str = "tracestate";
/// The longest `tracestate` kept (W3C: "vendors SHOULD propagate at least 512 characters
/// of a combined header"); a longer one is ignored.
pub const MAX_TRACESTATE: usize = 512;

/// A parsed `traceparent` of version `00`, with the `tracestate` that came with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// 32 lowercase hex digits, not all zero.
    pub trace_id: String,
    /// The caller's span id: 16 lowercase hex digits, not all zero.
    pub parent_span_id: String,
    /// The trace flags (bit 0: sampled).
    pub flags: u8,
    /// The `tracestate` list, when present and well formed enough to log.
    pub tracestate: Option<String>,
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `traceparent` = `00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>` (55
/// characters, lowercase hex); `None` for anything else: another version, upper case, a
/// trace id or parent id of only zeros.
pub fn parse_traceparent(value: &str) -> Option<(String, String, u8)> {
    if value.len() != 55 || !value.is_ascii() {
        return None;
    }
    let mut parts = value.split('-');
    let (version, trace_id, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || version != "00"
        || trace_id.len() != 32
        || parent.len() != 16
        || flags.len() != 2
        || ![trace_id, parent, flags].iter().all(|p| is_lower_hex(p))
        || trace_id.bytes().all(|b| b == b'0')
        || parent.bytes().all(|b| b == b'0')
    {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some((trace_id.to_owned(), parent.to_owned(), flags))
}

/// Whether `value` may be kept as a `tracestate`: at most [`MAX_TRACESTATE`] printable
/// ASCII characters (its list members are not interpreted).
pub fn tracestate_ok(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_TRACESTATE
        && value.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

impl TraceContext {
    /// From a `traceparent` and an optional `tracestate`; `None` when the parent does not
    /// parse (a bad `tracestate` alone is dropped).
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let (trace_id, parent_span_id, flags) = parse_traceparent(traceparent)?;
        Some(Self {
            trace_id,
            parent_span_id,
            flags,
            tracestate: tracestate.filter(|s| tracestate_ok(s)).map(str::to_owned),
        })
    }

    /// The trace context in `params._meta`, if one is there and well formed.
    pub fn from_meta(params: Option<&Value>) -> Option<Self> {
        let meta = params?.get("_meta")?;
        Self::parse(
            meta.get(TRACEPARENT)?.as_str()?,
            meta.get(TRACESTATE).and_then(Value::as_str),
        )
    }

    /// Whether the caller sampled this trace (flag bit 0).
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }
}

/// Put a trace context that came outside the message (the HTTP `traceparent` /
/// `tracestate` headers) into `params._meta`, unless `_meta` has a `traceparent` of its
/// own or `traceparent` does not parse. `params` that are not an object are left alone.
pub fn adopt(params: &mut Option<Value>, traceparent: &str, tracestate: Option<&str>) {
    let Some(ctx) = TraceContext::parse(traceparent, tracestate) else {
        return;
    };
    let params = params.get_or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(obj) = params.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    if meta.contains_key(TRACEPARENT) {
        return;
    }
    meta.insert(TRACEPARENT.into(), Value::String(traceparent.to_owned()));
    if let Some(state) = ctx.tracestate {
        meta.entry(TRACESTATE)
            .or_insert_with(|| Value::String(state));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GOOD: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

    #[test]
    fn the_spec_example_parses() {
        let t = TraceContext::parse(GOOD, Some("congo=t61rcWkgMzE")).unwrap();
        assert_eq!(t.trace_id, "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(t.parent_span_id, "00f067aa0ba902b7");
        assert!(t.sampled());
        assert_eq!(t.tracestate.as_deref(), Some("congo=t61rcWkgMzE"));
    }

    #[test]
    fn malformed_values_are_ignored() {
        for bad in [
            "",
            "01-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-0g",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b-701",
            "00_0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01x",
            "00-0af7651916cd43dd8448eb211c8031é-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad:?}");
        }
        let long = "a=".to_owned() + &"b".repeat(MAX_TRACESTATE);
        assert_eq!(
            TraceContext::parse(GOOD, Some(&long)).unwrap().tracestate,
            None
        );
        assert_eq!(
            TraceContext::parse(GOOD, Some("a=b\nc"))
                .unwrap()
                .tracestate,
            None
        );
    }

    #[test]
    fn read_from_meta_and_adopted_from_headers() {
        let p = json!({"_meta": {"traceparent": GOOD}});
        assert!(TraceContext::from_meta(Some(&p)).is_some());
        assert!(TraceContext::from_meta(Some(&json!({"_meta": {"traceparent": 7}}))).is_none());
        assert!(TraceContext::from_meta(None).is_none());

        let mut none = None;
        adopt(&mut none, GOOD, Some("k=v"));
        assert_eq!(
            none,
            Some(json!({"_meta": {"traceparent": GOOD, "tracestate": "k=v"}}))
        );
        // The message's own context wins; a bad header is not copied.
        let own = "00-11111111111111111111111111111111-2222222222222222-00";
        let mut p = Some(json!({"_meta": {"traceparent": own}}));
        adopt(&mut p, GOOD, None);
        assert_eq!(p.unwrap()["_meta"]["traceparent"], own);
        let mut p = Some(json!({"a": 1}));
        adopt(&mut p, "garbage", None);
        assert_eq!(p, Some(json!({"a": 1})));
    }
}
