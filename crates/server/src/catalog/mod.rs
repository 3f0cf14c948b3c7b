//! What a server offers besides tools: resources and resource templates, prompts,
//! completions and log messages, served in both generations.
//!
//! A [`Catalog`] is filled by the [`crate::ServerBuilder`] (`resource`,
//! `resource_template`, `prompt`, `logging`); a server serves the methods of what it
//! has, and declares the matching capabilities (`resources`, `prompts`, `completions`,
//! `logging`). A server without any (`mcp-tasks serve`, a gateway) is unchanged: those
//! methods go to its fallback.

mod asking;
pub mod complete;
pub mod prompt;
mod prompt_get;
pub mod resource;
pub(crate) mod subscribe;

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_tasks_core::RequestorChannel;
use mcp_tasks_proto::{ErrorObject, codes, methods};
use mcp_tasks_rpc::RequestContext;
use serde_json::{Map, Value, json};

use self::complete::Reference;
use self::prompt::{Prompt, PromptContext};
use self::resource::{ReadRequest, Resource, ResourceReader, ResourceTemplate};
pub use self::subscribe::{MAX_SUBSCRIBED_URI_BYTES, MAX_SUBSCRIPTIONS_PER_SESSION, Subscriptions};
use crate::logging::LogThreshold;
use crate::session::RequestChannel;

/// Resources, templates, prompts and logging of a server.
#[derive(Clone)]
pub struct Catalog {
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) prompts: Vec<Prompt>,
    pub(crate) logging: bool,
    /// `notifications/resources/updated`, to the sessions that subscribed.
    pub(crate) updates: tokio::sync::broadcast::Sender<Arc<str>>,
}

impl Default for Catalog {
    fn default() -> Self {
        Self {
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            logging: false,
            updates: tokio::sync::broadcast::Sender::new(64),
        }
    }
}

mcp_tasks_proto::debug_non_exhaustive!(Catalog, |s| {
    resources: s.resources.len(),
    templates: s.templates.len(),
    prompts: s.prompts.len(),
    logging: s.logging,
});

/// Which generation a request of the catalog comes from: the errors and the fields of
/// the results differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gen {
    /// 2025-11-25 (a session).
    Legacy,
    /// 2026-07-28 (stateless).
    Modern,
}

/// Who asks, besides the method and params: a 2025-11-25 session, or a 2026-07-28
/// request.
pub(crate) enum Side<'a> {
    /// A 2025-11-25 session: its log level, subscriptions, the request, and the client's
    /// capabilities.
    Session {
        log: &'a LogThreshold,
        subscriptions: &'a Arc<Subscriptions>,
        cx: &'a RequestContext,
        capabilities: Value,
    },
    /// A 2026-07-28 request: the key of `requestState`s, the caller, its capabilities.
    Modern {
        key: &'a [u8; 32],
        principal: Option<&'a str>,
        capabilities: Value,
    },
}

impl Side<'_> {
    fn generation(&self) -> Gen {
        match self {
            Self::Session { .. } => Gen::Legacy,
            Self::Modern { .. } => Gen::Modern,
        }
    }
}

impl Catalog {
    fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty()
    }

    fn completes(&self) -> bool {
        self.prompts.iter().any(Prompt::completes)
            || self.templates.iter().any(|t| !t.completers.is_empty())
    }

    /// The capabilities of what the catalog has, for `initialize` (`legacy`) or
    /// `server/discover`. `resources.subscribe` and `logging` only in 2025-11-25: the
    /// 2026-07-28 changelog removes `logging/setLevel`, and subscriptions there go through
    /// `subscriptions/listen`.
    pub(crate) fn capabilities(&self, generation: Gen) -> Map<String, Value> {
        let mut caps = Map::new();
        if self.has_resources() {
            let mut r = json!({ "listChanged": false });
            if generation == Gen::Legacy {
                r["subscribe"] = json!(true);
            }
            caps.insert("resources".into(), r);
        }
        if !self.prompts.is_empty() {
            caps.insert("prompts".into(), json!({ "listChanged": false }));
        }
        if self.completes() {
            caps.insert("completions".into(), json!({}));
        }
        if self.logging && generation == Gen::Legacy {
            caps.insert("logging".into(), json!({}));
        }
        caps
    }

    /// Whether the catalog serves `method` in `generation`.
    pub(crate) fn serves(&self, method: &str, generation: Gen) -> bool {
        match method {
            methods::RESOURCES_LIST
            | methods::RESOURCES_TEMPLATES_LIST
            | methods::RESOURCES_READ => self.has_resources(),
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                self.has_resources() && generation == Gen::Legacy
            }
            methods::PROMPTS_LIST | methods::PROMPTS_GET => !self.prompts.is_empty(),
            methods::COMPLETION_COMPLETE => self.completes(),
            methods::LOGGING_SET_LEVEL => self.logging && generation == Gen::Legacy,
            _ => false,
        }
    }

    /// Serve `method` (one [`Self::serves`] says yes to) for `side`.
    ///
    /// # Errors
    /// The JSON-RPC error to answer with.
    pub(crate) async fn handle(
        &self,
        method: &str,
        params: Option<&Value>,
        side: Side<'_>,
    ) -> Result<Value, ErrorObject> {
        let generation = side.generation();
        match method {
            methods::RESOURCES_LIST => {
                no_cursor(params)?;
                let list: Vec<Value> = self.resources.iter().map(Resource::to_listing).collect();
                Ok(cacheable(json!({ "resources": list }), generation))
            }
            methods::RESOURCES_TEMPLATES_LIST => {
                no_cursor(params)?;
                let list: Vec<Value> = self
                    .templates
                    .iter()
                    .map(ResourceTemplate::to_listing)
                    .collect();
                Ok(cacheable(json!({ "resourceTemplates": list }), generation))
            }
            methods::RESOURCES_READ => self.read(params, generation).await,
            methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                let Side::Session {
                    subscriptions, cx, ..
                } = side
                else {
                    return Err(ErrorObject::method_not_found(method));
                };
                let uri = uri_param(params)?;
                if method == methods::RESOURCES_SUBSCRIBE {
                    if self.find(uri).is_none() {
                        return Err(not_found(uri, generation));
                    }
                    subscriptions.add(uri)?;
                    subscriptions.forward(&cx.peer, self.updates.subscribe());
                } else {
                    subscriptions.remove(uri);
                }
                Ok(json!({}))
            }
            methods::PROMPTS_LIST => {
                no_cursor(params)?;
                let list: Vec<Value> = self.prompts.iter().map(Prompt::to_listing).collect();
                Ok(cacheable(json!({ "prompts": list }), generation))
            }
            methods::PROMPTS_GET => {
                let name = params
                    .and_then(|p| p.get("name"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| ErrorObject::invalid_params("`name` must be a string"))?;
                let prompt = self
                    .prompts
                    .iter()
                    .find(|p| p.name == name)
                    .ok_or_else(|| {
                        ErrorObject::invalid_params(format!("Unknown prompt: `{name}`"))
                    })?;
                match side {
                    Side::Session {
                        cx, capabilities, ..
                    } => {
                        let channel: Arc<dyn RequestorChannel> =
                            Arc::new(RequestChannel(cx.clone()));
                        let pcx = PromptContext::new(Some(channel), capabilities, BTreeMap::new());
                        prompt
                            .get(params.and_then(|p| p.get("arguments")), pcx)
                            .await
                    }
                    Side::Modern {
                        key,
                        principal,
                        capabilities,
                    } => prompt_get::get_modern(prompt, params, key, principal, capabilities).await,
                }
            }
            methods::COMPLETION_COMPLETE => self.complete(params).await,
            methods::LOGGING_SET_LEVEL => {
                let Side::Session { log, .. } = side else {
                    return Err(ErrorObject::method_not_found(method));
                };
                let level = crate::logging::set_level_params(params)?;
                log.set(Some(level));
                Ok(json!({}))
            }
            other => Err(ErrorObject::method_not_found(format!(
                "`{other}` is not served"
            ))),
        }
    }

    /// What reads `uri`, and the variables it is asked with: the resource at `uri` (no
    /// variables), else the first template that matches it.
    fn find(&self, uri: &str) -> Option<(&dyn ResourceReader, BTreeMap<String, String>)> {
        if let Some(r) = self.resources.iter().find(|r| r.uri == uri) {
            return Some((r.reader(), BTreeMap::new()));
        }
        self.templates
            .iter()
            .find_map(|t| t.matches(uri).map(|vars| (t.reader(), vars)))
    }

    /// `resources/read`.
    ///
    /// Spec (2025-11-25, resources, "Error Handling"): "Resource not found: `-32002`".
    /// SEP-2164 (2026-07-28): servers "MUST NOT return an empty contents array for
    /// non-existent resources" and answer -32602 with the URI in `data.uri`.
    async fn read(&self, params: Option<&Value>, generation: Gen) -> Result<Value, ErrorObject> {
        let uri = uri_param(params)?;
        let Some((reader, variables)) = self.find(uri) else {
            return Err(not_found(uri, generation));
        };
        let req = ReadRequest {
            uri: uri.to_owned(),
            variables,
        };
        let contents = reader.read(req).await?;
        if contents.is_empty() {
            return Err(not_found(uri, generation));
        }
        let result = json!({ "contents": contents });
        Ok(match generation {
            Gen::Legacy => result,
            // Contents may change at any time: no promise that they stay fresh.
            Gen::Modern => with_cache(result, 0, "private"),
        })
    }

    /// `completion/complete`: the completer of the prompt argument or template variable,
    /// no values when it has none.
    ///
    /// # Errors
    /// -32602 for bad params or an unknown prompt or template.
    async fn complete(&self, params: Option<&Value>) -> Result<Value, ErrorObject> {
        let p = complete::parse(params)?;
        let completer = match &p.reference {
            Reference::Prompt(name) => self
                .prompts
                .iter()
                .find(|x| &x.name == name)
                .ok_or_else(|| ErrorObject::invalid_params(format!("Unknown prompt: `{name}`")))?
                .completer(&p.argument),
            Reference::Resource(uri) => self
                .templates
                .iter()
                .find(|t| &t.uri_template == uri)
                .ok_or_else(|| {
                    ErrorObject::invalid_params(format!("Unknown resource template: `{uri}`"))
                })?
                .completers
                .get(&p.argument),
        };
        let values = match completer {
            Some(c) => c.complete(p.value, p.context).await,
            None => Vec::new(),
        };
        Ok(complete::result(values))
    }
}

/// Unknown `uri`: -32002 in 2025-11-25, -32602 in 2026-07-28 (SEP-2164), `data.uri`
/// both.
fn not_found(uri: &str, generation: Gen) -> ErrorObject {
    let code = match generation {
        Gen::Legacy => codes::RESOURCE_NOT_FOUND,
        Gen::Modern => codes::INVALID_PARAMS,
    };
    ErrorObject::new(code, format!("Resource not found: `{uri}`")).with_data(json!({ "uri": uri }))
}

fn uri_param(params: Option<&Value>) -> Result<&str, ErrorObject> {
    params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorObject::invalid_params("`uri` must be a string"))
}

/// Every list fits on one page: no cursor is ever issued, so any cursor is invalid.
fn no_cursor(params: Option<&Value>) -> Result<(), ErrorObject> {
    match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(_)) => Err(ErrorObject::invalid_params("Invalid cursor")),
        Some(_) => Err(ErrorObject::invalid_params("`cursor` must be a string")),
    }
}

/// A list result; in 2026-07-28 with the caching hints. Schema (2026-07-28): `ttlMs` and
/// `cacheScope` are required on list results. The lists of a process never change.
fn cacheable(result: Value, generation: Gen) -> Value {
    match generation {
        Gen::Legacy => result,
        Gen::Modern => with_cache(result, crate::modern::cache::CACHE_TTL_MS, "public"),
    }
}

fn with_cache(mut result: Value, ttl_ms: u64, scope: &str) -> Value {
    result["ttlMs"] = json!(ttl_ms);
    result["cacheScope"] = json!(scope);
    result
}
