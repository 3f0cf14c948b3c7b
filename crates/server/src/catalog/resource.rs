//! Resources a server exposes: fixed URIs ([`Resource`]) and URI templates
//! ([`ResourceTemplate`]), each read by an async handler.
//!
//! Spec (2025-11-25, resources): "Resources allow servers to share data that provides
//! context to language models, such as files, database schemas, or application-specific
//! information. Each resource is uniquely identified by a URI."

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_proto::{ErrorObject, ResourceContents};
use serde_json::{Map, Value};

use super::complete::{Completer, FnCompleter};

/// What a resource's handler is asked to read.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReadRequest {
    /// The URI asked for.
    pub uri: String,
    /// The template's variables, from the URI (empty for a fixed [`Resource`]).
    pub variables: BTreeMap<String, String>,
}

/// Reads a resource.
#[async_trait]
pub trait ResourceReader: Send + Sync + 'static {
    /// The contents of `req.uri`. No contents (an empty list: a template's variables
    /// naming nothing) is answered as an unknown resource, with the code of the request's
    /// generation (-32002 in 2025-11-25, -32602 in 2026-07-28).
    async fn read(&self, req: ReadRequest) -> Result<Vec<ResourceContents>, ErrorObject>;
}

struct FnReader<F>(F);

#[async_trait]
impl<F, Fut> ResourceReader for FnReader<F>
where
    F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<ResourceContents>, ErrorObject>> + Send + 'static,
{
    async fn read(&self, req: ReadRequest) -> Result<Vec<ResourceContents>, ErrorObject> {
        (self.0)(req).await
    }
}

/// The metadata setters resources and templates share (`title`, `description`,
/// `mimeType`, and any other listed field).
macro_rules! listing_setters {
    () => {
        /// Set `title`, the display name.
        #[must_use]
        pub fn title(mut self, title: impl Into<String>) -> Self {
            self.extra.insert("title".into(), Value::from(title.into()));
            self
        }

        /// Set `description`.
        #[must_use]
        pub fn description(mut self, description: impl Into<String>) -> Self {
            self.extra
                .insert("description".into(), Value::from(description.into()));
            self
        }

        /// Set `mimeType`.
        #[must_use]
        pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
            self.extra
                .insert("mimeType".into(), Value::from(mime_type.into()));
            self
        }

        /// Set any other field of the listing (`annotations`, `icons`, `_meta`, ...).
        #[must_use]
        pub fn field(mut self, key: impl Into<String>, value: Value) -> Self {
            self.extra.insert(key.into(), value);
            self
        }
    };
}

/// A resource at a fixed URI, listed by `resources/list`.
#[derive(Clone)]
pub struct Resource {
    /// Its URI.
    pub uri: String,
    /// Its programmatic name.
    pub name: String,
    /// The other fields of its listing (`title`, `description`, `mimeType`, ...).
    pub extra: Map<String, Value>,
    reader: Arc<dyn ResourceReader>,
}

mcp_tasks_proto::debug_non_exhaustive!(Resource, |s| { uri: s.uri, name: s.name });

impl Resource {
    /// A resource read by `f`.
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ErrorObject>> + Send + 'static,
    {
        Self {
            uri: uri.into(),
            name: name.into(),
            extra: Map::new(),
            reader: Arc::new(FnReader(f)),
        }
    }

    /// A resource whose contents are always `text` of `mime_type`.
    pub fn text(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: &str,
        text: impl Into<String>,
    ) -> Self {
        let uri = uri.into();
        let contents = ResourceContents::text(uri.clone(), Some(mime_type), text);
        Self::fixed(uri, name, mime_type, contents)
    }

    /// A resource whose contents are always the bytes `base64` (base64-encoded) of
    /// `mime_type`.
    pub fn blob(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: &str,
        base64: impl Into<String>,
    ) -> Self {
        let uri = uri.into();
        let contents = ResourceContents::blob(uri.clone(), Some(mime_type), base64);
        Self::fixed(uri, name, mime_type, contents)
    }

    /// A resource whose contents are always `contents`, of `mime_type`.
    fn fixed(
        uri: String,
        name: impl Into<String>,
        mime_type: &str,
        contents: ResourceContents,
    ) -> Self {
        Self::new(uri, name, move |_| {
            let c = contents.clone();
            async move { Ok(vec![c]) }
        })
        .mime_type(mime_type)
    }

    listing_setters!();

    /// The `resources/list` entry.
    pub fn to_listing(&self) -> Value {
        listing(&self.extra, ("uri", &self.uri), &self.name)
    }

    /// What reads it.
    pub(super) fn reader(&self) -> &dyn ResourceReader {
        &*self.reader
    }
}

/// Resources under a URI template (RFC 6570), listed by `resources/templates/list`; a
/// `resources/read` of a URI the template matches is read by its handler, given the
/// variables.
///
/// Matching knows the forms `{name}` (one or more characters, no `/`) and `{+name}` (one
/// or more of any character); the rest of the template is literal.
#[derive(Clone)]
pub struct ResourceTemplate {
    /// The URI template (`file:///{path}`).
    pub uri_template: String,
    /// Its programmatic name.
    pub name: String,
    /// The other fields of its listing (`title`, `description`, `mimeType`, ...).
    pub extra: Map<String, Value>,
    reader: Arc<dyn ResourceReader>,
    pub(crate) completers: BTreeMap<String, Arc<dyn Completer>>,
}

mcp_tasks_proto::debug_non_exhaustive!(ResourceTemplate, |s| { uri_template: s.uri_template });

impl ResourceTemplate {
    /// Resources under `uri_template`, read by `f`.
    pub fn new<F, Fut>(uri_template: impl Into<String>, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(ReadRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ErrorObject>> + Send + 'static,
    {
        // Listed and read as a resource is, with the template in place of the URI.
        let Resource {
            uri,
            name,
            extra,
            reader,
        } = Resource::new(uri_template, name, f);
        Self {
            uri_template: uri,
            name,
            extra,
            reader,
            completers: BTreeMap::new(),
        }
    }

    listing_setters!();

    /// Complete the value of `variable` with `f` (`completion/complete` with a
    /// `ref/resource` of this template): given the partial value and the variables
    /// already resolved (`context.arguments`), the candidates.
    #[must_use]
    pub fn complete<F, Fut>(mut self, variable: impl Into<String>, f: F) -> Self
    where
        F: Fn(String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<String>> + Send + 'static,
    {
        self.completers
            .insert(variable.into(), Arc::new(FnCompleter(f)));
        self
    }

    /// The `resources/templates/list` entry.
    pub fn to_listing(&self) -> Value {
        listing(&self.extra, ("uriTemplate", &self.uri_template), &self.name)
    }

    /// The variables of `uri` when this template matches it.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let parts = parse_template(&self.uri_template);
        let mut vars = BTreeMap::new();
        match_parts(&parts, uri, &mut vars).then_some(vars)
    }

    /// What reads the resources under it.
    pub(super) fn reader(&self) -> &dyn ResourceReader {
        &*self.reader
    }
}

/// The listing of a resource or template: the other fields, its URI or template (`key`
/// and its value), and its name.
fn listing(extra: &Map<String, Value>, (key, id): (&str, &str), name: &str) -> Value {
    let mut m = extra.clone();
    m.insert(key.into(), Value::from(id));
    m.insert("name".into(), Value::from(name));
    Value::Object(m)
}

/// A piece of a URI template.
#[derive(Debug, PartialEq)]
enum Part<'a> {
    Literal(&'a str),
    /// A variable; `reserved` (`{+name}`) may contain `/`.
    Var {
        name: &'a str,
        reserved: bool,
    },
}

fn parse_template(t: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        let expr = &rest[open + 1..close];
        parts.push(match expr.strip_prefix('+') {
            Some(name) => Part::Var {
                name,
                reserved: true,
            },
            None => Part::Var {
                name: expr,
                reserved: false,
            },
        });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    parts
}

/// Whether `s` matches `parts`, filling `vars` (backtracking over variable lengths).
fn match_parts<'a>(parts: &[Part<'a>], s: &str, vars: &mut BTreeMap<String, String>) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return s.is_empty();
    };
    match first {
        Part::Literal(l) => s
            .strip_prefix(l)
            .is_some_and(|tail| match_parts(rest, tail, vars)),
        Part::Var { name, reserved } => {
            let limit = if *reserved {
                s.len()
            } else {
                s.find('/').unwrap_or(s.len())
            };
            // Longest first, so that `{id}` before a literal takes what it can.
            for end in (1..=limit).rev().filter(|e| s.is_char_boundary(*e)) {
                if match_parts(rest, &s[end..], vars) {
                    vars.insert((*name).to_owned(), s[..end].to_owned());
                    return true;
                }
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(t: &str) -> ResourceTemplate {
        ResourceTemplate::new(t, "t", |_| async { Ok(vec![]) })
    }

    #[test]
    fn a_template_matches_its_uris_and_names_the_variables() {
        let t = template("test://template/{id}/data");
        let vars = t.matches("test://template/123/data").expect("matches");
        assert_eq!(vars.get("id").map(String::as_str), Some("123"));
        assert!(
            t.matches("test://template//data").is_none(),
            "empty variable"
        );
        assert!(
            t.matches("test://template/1/2/data").is_none(),
            "`/` in {{id}}"
        );
        assert!(t.matches("test://template/1/datax").is_none());
        assert!(t.matches("other://template/1/data").is_none());

        let t = template("file:///{+path}");
        let vars = t.matches("file:///a/b/c.txt").expect("matches");
        assert_eq!(vars["path"], "a/b/c.txt");

        let t = template("db://{table}/{row}");
        let vars = t.matches("db://users/42").expect("matches");
        assert_eq!(
            (vars["table"].as_str(), vars["row"].as_str()),
            ("users", "42")
        );
    }

    #[test]
    fn listings_carry_the_set_fields() {
        let r = Resource::text("test://a", "a", "text/plain", "x").title("A");
        assert_eq!(
            r.to_listing(),
            serde_json::json!({"uri": "test://a", "name": "a", "mimeType": "text/plain", "title": "A"})
        );
        let t = template("test://{x}").description("d");
        assert_eq!(
            t.to_listing(),
            serde_json::json!({"uriTemplate": "test://{x}", "name": "t", "description": "d"})
        );
    }
}
