//! `CallToolResult`, the result of `tools/call`, and its content blocks.
//!
//! Spec (2025-11-25 schema, `CallToolResult.isError`): "Any errors that originate from the
//! tool SHOULD be reported inside the result object, with `isError` set to true, _not_ as
//! an MCP protocol-level error response. Otherwise, the LLM would not be able to see that
//! an error occurred and self-correct." [`CallToolResult::error`] builds that form.
//!
//! Tolerant in what we accept: a content block of a `type` this crate does not know is
//! kept as raw JSON ([`ContentBlock::Unknown`]), and every struct keeps the fields it does
//! not know in `extra`, so a result that passes through (a gateway) loses nothing. The one
//! normalisation is `isError: false`, which is the default and is not written back.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

/// Optional annotations of a content block (`Annotations`).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the content is for (`"user"`, `"assistant"`).
    pub audience: Option<Vec<String>>,
    /// Importance from 0 (least) to 1 (most); kept as written (`1` stays `1`).
    pub priority: Option<Number>,
    /// ISO 8601 time of the last modification.
    pub last_modified: Option<String>,
    /// Every other field, unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What every content block may carry besides its own fields.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BlockCommon {
    /// Optional annotations.
    pub annotations: Option<Annotations>,
    /// `_meta`.
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
    /// Every other field, unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `TextContent`: text for the model or the user.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Annotations, `_meta` and every other field.
    #[serde(flatten)]
    pub common: BlockCommon,
}

/// `ImageContent` or `AudioContent`: base64 data with its MIME type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MediaContent {
    /// The base64-encoded data.
    pub data: String,
    /// The MIME type of the data.
    pub mime_type: String,
    /// Annotations, `_meta` and every other field.
    #[serde(flatten)]
    pub common: BlockCommon,
}

impl MediaContent {
    /// Base64 `data` of `mime_type`, without annotations.
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self {
            data: data.into(),
            mime_type: mime_type.into(),
            ..Self::default()
        }
    }
}

/// `ResourceLink`: a resource the server can read, by URI.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLink {
    /// The URI of the resource.
    pub uri: String,
    /// Its programmatic name.
    pub name: String,
    /// A display name.
    pub title: Option<String>,
    /// What the resource represents.
    pub description: Option<String>,
    /// Its MIME type, if known.
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    pub size: Option<u64>,
    /// Annotations, `_meta` and every other field (`icons`, ...).
    #[serde(flatten)]
    pub common: BlockCommon,
}

/// The contents of an embedded resource: text or a base64 blob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// `TextResourceContents`.
    Text {
        /// The URI of the resource.
        uri: String,
        /// The text.
        text: String,
        /// The MIME type, if known.
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// `_meta` and every other field, unchanged.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
    /// `BlobResourceContents`.
    Blob {
        /// The URI of the resource.
        uri: String,
        /// The base64-encoded data.
        blob: String,
        /// The MIME type, if known.
        #[serde(default, rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// `_meta` and every other field, unchanged.
        #[serde(flatten)]
        extra: Map<String, Value>,
    },
}

impl ResourceContents {
    /// `TextResourceContents` of `uri`.
    pub fn text(uri: impl Into<String>, mime_type: Option<&str>, text: impl Into<String>) -> Self {
        Self::Text {
            uri: uri.into(),
            text: text.into(),
            mime_type: mime_type.map(str::to_owned),
            extra: Map::new(),
        }
    }

    /// `BlobResourceContents` of `uri`: `blob` is the base64-encoded data.
    pub fn blob(uri: impl Into<String>, mime_type: Option<&str>, blob: impl Into<String>) -> Self {
        Self::Blob {
            uri: uri.into(),
            blob: blob.into(),
            mime_type: mime_type.map(str::to_owned),
            extra: Map::new(),
        }
    }

    /// The URI of the resource.
    pub fn uri(&self) -> &str {
        match self {
            Self::Text { uri, .. } | Self::Blob { uri, .. } => uri,
        }
    }
}

/// `EmbeddedResource`: the contents of a resource, inline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The contents.
    pub resource: ResourceContents,
    /// Annotations, `_meta` and every other field.
    #[serde(flatten)]
    pub common: BlockCommon,
}

/// One entry of `content` (`ContentBlock`), by its `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `"type": "text"`.
    Text(TextContent),
    /// `"type": "image"`.
    Image(MediaContent),
    /// `"type": "audio"`.
    Audio(MediaContent),
    /// `"type": "resource_link"`.
    ResourceLink(ResourceLink),
    /// `"type": "resource"`.
    Resource(EmbeddedResource),
    /// A block of a `type` this crate does not know, kept as received (a later protocol
    /// revision may add types; we pass them on rather than reject the result).
    Unknown(Value),
}

/// The known block types, tagged by `type`, for serde.
#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Known {
    Text(TextContent),
    Image(MediaContent),
    Audio(MediaContent),
    ResourceLink(ResourceLink),
    Resource(EmbeddedResource),
}

const KNOWN_TYPES: &[&str] = &["text", "image", "audio", "resource_link", "resource"];

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Serialising the known variants through `Known` needs owned values; a borrowed
        // twin of `Known` would duplicate every variant, so clone the (small) block.
        let known = match self {
            Self::Text(c) => Known::Text(c.clone()),
            Self::Image(c) => Known::Image(c.clone()),
            Self::Audio(c) => Known::Audio(c.clone()),
            Self::ResourceLink(c) => Known::ResourceLink(c.clone()),
            Self::Resource(c) => Known::Resource(c.clone()),
            Self::Unknown(v) => return v.serialize(s),
        };
        known.serialize(s)
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let ty = match v.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(_) => return Err(D::Error::custom("content block `type` must be a string")),
            None if v.is_object() => {
                return Err(D::Error::custom("content block without a `type`"));
            }
            None => return Err(D::Error::custom("a content block must be an object")),
        };
        if !KNOWN_TYPES.contains(&ty) {
            return Ok(Self::Unknown(v));
        }
        let ty = ty.to_owned();
        Ok(
            match Known::deserialize(v)
                .map_err(|e| D::Error::custom(format!("`{ty}` content block: {e}")))?
            {
                Known::Text(c) => Self::Text(c),
                Known::Image(c) => Self::Image(c),
                Known::Audio(c) => Self::Audio(c),
                Known::ResourceLink(c) => Self::ResourceLink(c),
                Known::Resource(c) => Self::Resource(c),
            },
        )
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent {
            text: text.into(),
            ..TextContent::default()
        })
    }

    /// An image block from base64 `data`.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image(MediaContent::new(data, mime_type))
    }

    /// An audio block from base64 `data`.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio(MediaContent::new(data, mime_type))
    }

    /// A link to a resource.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ResourceLink(ResourceLink {
            uri: uri.into(),
            name: name.into(),
            ..ResourceLink::default()
        })
    }

    /// An embedded text resource.
    pub fn embedded_text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self::Resource(EmbeddedResource {
            resource: ResourceContents::Text {
                uri: uri.into(),
                text: text.into(),
                mime_type: None,
                extra: Map::new(),
            },
            common: BlockCommon::default(),
        })
    }

    /// An embedded resource (text or blob).
    pub fn embedded(resource: ResourceContents) -> Self {
        Self::Resource(EmbeddedResource {
            resource,
            common: BlockCommon::default(),
        })
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The result of `tools/call` (`CallToolResult`).
///
/// ```
/// use mcp_tasks_proto::CallToolResult;
/// use serde_json::json;
///
/// let ok = CallToolResult::text("sunny");
/// assert_eq!(ok.to_value(), json!({"content": [{"type": "text", "text": "sunny"}]}));
/// let bad = CallToolResult::error("days: 9 is greater than the maximum of 7");
/// assert!(bad.is_error);
/// assert_eq!(bad.to_value()["isError"], json!(true));
/// ```
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The unstructured result: content blocks.
    pub content: Vec<ContentBlock>,
    /// The structured result, an object (checked against the tool's `outputSchema`, if
    /// it has one, by the client).
    pub structured_content: Option<Map<String, Value>>,
    /// Whether the call ended in an error; written only when true (absent means false).
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_error: bool,
    /// `_meta`.
    #[serde(rename = "_meta")]
    pub meta: Option<Map<String, Value>>,
    /// Every other field, unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl CallToolResult {
    /// A successful result with these blocks.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)])
    }

    /// A tool execution error (`isError: true`) whose one text block is `message`.
    ///
    /// Spec (tools page): "Tool Execution Errors: Reported in tool results with
    /// `isError: true`" — the model sees the message and can correct itself. Say what
    /// was wrong and how to fix it.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(message)
        }
    }

    /// A successful result carrying `value` as `structuredContent`, and its JSON text as
    /// a text block.
    ///
    /// Spec (tools page, structured content): "For backwards compatibility, a tool that
    /// returns structured content SHOULD also return the serialized JSON in a
    /// TextContent block."
    pub fn structured(value: Map<String, Value>) -> Self {
        let text = Value::Object(value.clone()).to_string();
        Self {
            structured_content: Some(value),
            ..Self::text(text)
        }
    }

    /// [`Self::structured`] from any serialisable value.
    ///
    /// # Errors
    /// When `value` fails to serialise or does not serialise to a JSON object (the schema
    /// types `structuredContent` as an object).
    pub fn try_structured<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        match serde_json::to_value(value)? {
            Value::Object(m) => Ok(Self::structured(m)),
            other => Err(serde_json::Error::custom(format!(
                "structuredContent must be a JSON object, got {other}"
            ))),
        }
    }

    /// Append a content block.
    #[must_use]
    pub fn with_content(mut self, block: ContentBlock) -> Self {
        self.content.push(block);
        self
    }

    /// Set `structuredContent` (the content blocks are left as they are).
    #[must_use]
    pub fn with_structured_content(mut self, value: Map<String, Value>) -> Self {
        self.structured_content = Some(value);
        self
    }

    /// Set one `_meta` key.
    #[must_use]
    pub fn with_meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta
            .get_or_insert_with(Map::new)
            .insert(key.into(), value);
        self
    }

    /// Set or clear `isError`.
    #[must_use]
    pub fn with_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// The text of the first text block, if any.
    pub fn first_text(&self) -> Option<&str> {
        self.content.iter().find_map(ContentBlock::as_text)
    }

    /// Parse a result as received.
    ///
    /// # Errors
    /// When `value` is not a valid `CallToolResult` (no `content` array, a known block
    /// with missing or mistyped fields, `isError` not a boolean, ...).
    pub fn from_value(value: &Value) -> Result<Self, serde_json::Error> {
        Self::deserialize(value)
    }

    /// The JSON of this result.
    pub fn to_value(&self) -> Value {
        // Every map in here has string keys and every leaf is JSON already: serialising
        // to a `Value` cannot fail.
        serde_json::to_value(self).unwrap_or_else(|e| unreachable!("CallToolResult to JSON: {e}"))
    }
}

impl From<CallToolResult> for Value {
    fn from(r: CallToolResult) -> Self {
        r.to_value()
    }
}

impl From<String> for CallToolResult {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<&str> for CallToolResult {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl From<ContentBlock> for CallToolResult {
    fn from(block: ContentBlock) -> Self {
        Self::new(vec![block])
    }
}

impl From<Vec<ContentBlock>> for CallToolResult {
    fn from(content: Vec<ContentBlock>) -> Self {
        Self::new(content)
    }
}

#[cfg(test)]
mod tests;
