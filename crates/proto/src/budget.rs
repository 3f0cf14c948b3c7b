//! What a JSON value costs: its size as text, measured without building the text, and
//! what parsing a text into a [`serde_json::Value`] would allocate, estimated from the
//! text without parsing it.
//!
//! A `Value` tree is much larger than its text when the text holds many small objects
//! (each non-empty object is a map node of several hundred bytes; `{"a":0},` is 8 bytes of
//! text): a body within the byte limit could otherwise take a hundred times its size to
//! parse. [`parse_cost`] counts the containers, members, elements and strings of a text
//! in one pass that allocates nothing, and prices them at what `serde_json` allocates for
//! them; [`check_parse_cost`] refuses a text over a bound before it is parsed.

use serde::Serialize;

use crate::ErrorObject;

/// The most a message received over HTTP may be estimated to allocate when parsed
/// ([`parse_cost`]), by default: 64 MiB. A body of text (strings) costs about its size;
/// one of many small objects about a hundred times its size.
pub const MAX_PARSE_COST: usize = 64 * 1024 * 1024;

/// The estimated allocation of a non-empty object (its map's first node).
const OBJECT: usize = 640;
/// Of a member of an object (its key and value slots, and a share of further nodes).
const MEMBER: usize = 112;
/// Of an element of an array (its slot, with the growth of the vector).
const ELEMENT: usize = 64;
/// Of a string besides its bytes (the allocator's rounding).
const STRING: usize = 16;
/// Of the top-level value.
const TOP: usize = 32;
/// The most one byte of text adds to [`parse_cost`]: a `{` opening a non-empty object
/// (the object, and one element that no `:` pays back); `[` and `,` add an element, `:` a
/// member, `"` a string, a byte within a string one.
const MAX_PER_BYTE: usize = OBJECT + ELEMENT;

/// The size of `v` as compact JSON text (bytes), measured without building the text.
pub fn json_len<T: Serialize + ?Sized>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    // Serializing into a counter fails only for a value that cannot be JSON (a map with
    // non-string keys); what was counted until then is its size so far.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

/// What parsing `text` into a [`serde_json::Value`] would allocate, estimated in one pass
/// over the text (nothing is allocated, nothing is validated: a text that is not JSON is
/// priced all the same, and refused by the parser).
pub fn parse_cost(text: &[u8]) -> usize {
    let (mut objects, mut arrays, mut members, mut commas) = (0usize, 0usize, 0usize, 0usize);
    let (mut strings, mut string_bytes) = (0usize, 0usize);
    // The container just opened, until the next token says whether it is empty.
    let mut opened: Option<u8> = None;
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        i += 1;
        if b.is_ascii_whitespace() {
            continue;
        }
        match opened.take() {
            Some(b'{') if b != b'}' => objects += 1,
            Some(b'[') if b != b']' => arrays += 1,
            _ => {}
        }
        match b {
            b'"' => {
                strings += 1;
                let start = i;
                while i < text.len() {
                    match text[i] {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
                string_bytes += i.min(text.len()) - start;
                i += 1;
            }
            b'{' | b'[' => opened = Some(b),
            b':' => members += 1,
            b',' => commas += 1,
            _ => {}
        }
    }
    // Each comma separates two members or two elements; each non-empty container has one
    // more of them than it has commas.
    let elements = (commas + objects + arrays).saturating_sub(members);
    TOP.saturating_add(objects.saturating_mul(OBJECT))
        .saturating_add(members.saturating_mul(MEMBER))
        .saturating_add(elements.saturating_mul(ELEMENT))
        .saturating_add(strings.saturating_mul(STRING))
        .saturating_add(string_bytes)
}

/// Refuse `text` when parsing it is estimated ([`parse_cost`]) to allocate more than
/// `max` bytes.
///
/// # Errors
/// -32600 (Invalid Request) naming the estimate and the bound.
pub fn check_parse_cost(text: &[u8], max: usize) -> Result<(), ErrorObject> {
    // A text too short to reach `max` even if every byte cost the most one can is not
    // scanned (every request of a usual size: under ~93 KiB at the default bound).
    if text.len().saturating_mul(MAX_PER_BYTE).saturating_add(TOP) <= max {
        return Ok(());
    }
    let cost = parse_cost(text);
    if cost > max {
        return Err(ErrorObject::invalid_request(format!(
            "the message's {} bytes of JSON would take about {cost} bytes of memory to parse \
             (many small objects or values), over the {max}-byte bound",
            text.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_len_is_the_length_of_the_compact_text() {
        for v in [
            json!(null),
            json!({"a": [1, 2.5, "x\u{e9}\"y"], "b": {}}),
            json!("ü 🌍"),
        ] {
            assert_eq!(json_len(&v), v.to_string().len(), "{v}");
        }
        assert_eq!(json_len(&None::<serde_json::Value>), 4);
    }

    /// Many small objects cost about a hundred times their text; a long string about its
    /// size; the count is the same however the text is spaced.
    #[test]
    fn small_objects_are_priced_far_above_their_text_and_strings_near_it() {
        let objects = format!("[{}{{\"a\":0}}]", "{\"a\":0},".repeat(1000));
        let cost = parse_cost(objects.as_bytes());
        assert!(cost > 80 * objects.len(), "{cost} for {}", objects.len());
        let spaced = objects.replace(',', " ,\n ").replace(':', " : ");
        assert_eq!(parse_cost(spaced.as_bytes()), cost);
        let string = json!({"text": "x".repeat(100_000)}).to_string();
        let cost = parse_cost(string.as_bytes());
        assert!(cost < string.len() + 2000, "{cost} for {}", string.len());
        // Structural characters inside strings (escaped quotes too) are not counted.
        let quoted = json!({"t": "{[:,\"]}".repeat(1000)}).to_string();
        assert!(parse_cost(quoted.as_bytes()) < quoted.len() + 2000);
        // Empty containers allocate nothing of their own.
        let empties = format!("[{}{{}}]", "{},[],".repeat(1000));
        assert!(parse_cost(empties.as_bytes()) <= 32 + 64 * 2001);
    }

    /// No text costs more than [`MAX_PER_BYTE`] per byte (plus [`TOP`]), so the texts
    /// [`check_parse_cost`] does not scan are within its bound; and a text just over the
    /// bound is still scanned and refused.
    #[test]
    fn no_byte_costs_more_than_the_shortcut_assumes() {
        let worst = [
            "{".repeat(1000),
            "{{}".repeat(300),
            "[".repeat(1000),
            ",".repeat(1000),
            ":".repeat(1000),
            "\"\"".repeat(500),
            "{\"\":".repeat(300),
            "[{},".repeat(300),
            "\"\\\\\\".repeat(100),
            format!("[{}]", "{\"a\":{\"b\":[1,{}]}},".repeat(100)),
        ];
        for text in &worst {
            let cost = parse_cost(text.as_bytes());
            assert!(
                cost <= TOP + MAX_PER_BYTE * text.len(),
                "{cost} for {} bytes of {}",
                text.len(),
                &text[..20.min(text.len())]
            );
        }
        // All `{`: each but the last opens a non-empty object, priced at the bound.
        let opens = "{".repeat(1000);
        assert_eq!(parse_cost(opens.as_bytes()), TOP + 999 * MAX_PER_BYTE);
        let max = parse_cost(opens.as_bytes()) - 1;
        assert!(
            opens.len() * MAX_PER_BYTE + TOP > max,
            "scanned, not skipped"
        );
        assert!(check_parse_cost(opens.as_bytes(), max).is_err());
    }

    #[test]
    fn a_text_over_the_bound_is_refused_with_32600_naming_it() {
        let text = format!("[{}0]", "{\"a\":{\"b\":1}},".repeat(1000));
        let e = check_parse_cost(text.as_bytes(), 100_000).unwrap_err();
        assert_eq!(e.code, -32600);
        assert!(e.message.contains("over the 100000-byte bound"), "{e:?}");
        check_parse_cost(text.as_bytes(), parse_cost(text.as_bytes())).unwrap();
    }
}
