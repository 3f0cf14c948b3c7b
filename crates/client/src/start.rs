//! How a [`Client`] starts: the transport opened, the server's revision found (unless the
//! configuration fixes it, or [`EraCache`] knows the HTTP endpoint), then `initialize`
//! (2025-11-25) or the `server/discover` result kept (2026-07-28).

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use mcp_tasks_proto::mcp::{LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};
use mcp_tasks_proto::methods;
use mcp_tasks_proto::modern as wire;
use mcp_tasks_proto::{Revision, RevisionChoice};
use mcp_tasks_rpc::Peer;
use mcp_tasks_rpc::http_client::HttpClientConfig;
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::ClientError;
use crate::client::{Client, Inner, Outbound, Transport, Wire};
use crate::config::ClientConfig;
use crate::era_cache::{EraCache, Known};
use crate::modern::{self, Probe};
use crate::receiver::Receiving;
use crate::rpc::{ClientHandler, Rpc, Shared};
use crate::types::InitializeResult;

/// The HTTP transport for `revision` ([`crate::connect::start_transport`]).
fn http_transport(
    peer: Peer,
    rx: Outbound,
    http: &HttpClientConfig,
    revision: Revision,
) -> Result<Transport, ClientError> {
    crate::connect::start_transport(peer, rx, http, revision).map(Transport::Http)
}

impl Client {
    /// Open the transport, find the server's era (unless [`ClientConfig::protocol`] fixes
    /// it, or [`EraCache`] knows the HTTP endpoint) and start: `initialize` for
    /// 2025-11-25, `server/discover` for 2026-07-28.
    pub(crate) async fn start(config: ClientConfig, wire: Wire) -> Result<Self, ClientError> {
        let receiving = match &config.task_receiver {
            Some(r) => {
                r.ensure_started().await?;
                Some(Receiving::new(r.clone()))
            }
            None => None,
        };
        let shared = Shared::new(
            config.elicitation.clone(),
            config.sampling.clone(),
            receiving,
        );
        let handler = Arc::new(ClientHandler(Arc::clone(&shared)));
        // Only an HTTP endpoint of a client that detects is looked up (a stdio connection
        // is one server process, detected once anyway).
        let (url, token) = match &wire {
            Wire::Http(h) if config.protocol == RevisionChoice::Auto => {
                (Some(h.url.clone()), h.bearer_token.clone())
            }
            _ => (None, None),
        };
        let cache = EraCache::global();
        let mut cached = url.as_deref().and_then(|u| cache.get(u, token.as_deref()));
        // A server of both eras, spoken to in 2025-11-25 as the configuration prefers.
        let wants_legacy = |discover: &Value| {
            config.protocol == RevisionChoice::Auto
                && config.prefer_revision == Revision::V2025_11_25
                && modern::lists_legacy(discover)
        };
        let first = match (&cached, config.protocol) {
            (_, RevisionChoice::Fixed(Revision::V2025_11_25)) | (Some(Known::Initialize), _) => {
                Revision::V2025_11_25
            }
            (Some(Known::Discover(d)), _) if wants_legacy(d) => Revision::V2025_11_25,
            _ => Revision::V2026_07_28,
        };
        let (peer, rx) = Peer::new(handler.clone());
        let (mut transport, http) = match wire {
            Wire::Once(open) => (open(peer.clone(), rx)?, None),
            Wire::Http(http) => (http_transport(peer.clone(), rx, &http, first)?, Some(http)),
        };
        let mut rpc = Rpc::new(peer, Arc::clone(&shared));
        let mut spoken = first;
        let mut reopen =
            |era: Revision, rpc: &mut Rpc, transport: &mut Transport| -> Result<(), ClientError> {
                if let Some(http) = &http
                    && era != spoken
                {
                    rpc.peer.close();
                    let (peer, rx) = Peer::new(handler.clone());
                    *transport = http_transport(peer.clone(), rx, http, era)?;
                    *rpc = Rpc::new(peer, Arc::clone(&shared));
                }
                spoken = era;
                Ok(())
            };
        // The `DiscoverResult` of a modern server, cached or probed.
        let mut discovered = None;
        match cached.take() {
            Some(Known::Discover(discover)) => {
                tracing::debug!("a 2026-07-28 server, as cached for its endpoint");
                discovered = Some(discover);
            }
            Some(Known::Initialize) => match initialize(&rpc, &config).await {
                Ok(init) => {
                    tracing::debug!("a 2025-11-25 server, as cached for its endpoint");
                    return Ok(Self::legacy(config, rpc, transport, init, url));
                }
                Err(e) => {
                    // Spec (versioning): "re-probing if the cached assumption later fails".
                    tracing::debug!(error = %e, "initialize failed where a 2025-11-25 server was cached: detecting the era again");
                    if let Some(u) = &url {
                        cache.forget(u);
                    }
                    reopen(Revision::V2026_07_28, &mut rpc, &mut transport)?;
                }
            },
            None => {}
        }
        let fixed = config.protocol.fixed();
        if discovered.is_none() && !fixed.is_some_and(Revision::has_initialize) {
            match modern::probe(&rpc, &config).await {
                Ok(Probe::Modern(discover)) => {
                    if let Some(u) = &url {
                        cache.put(u, token.as_deref(), Known::Discover(discover.clone()));
                    }
                    discovered = Some(discover);
                }
                Ok(Probe::Legacy(why)) if fixed.is_some_and(Revision::is_stateless) => {
                    rpc.peer.close();
                    return Err(ClientError::Protocol(format!(
                        "the server does not speak {} (asked for it only): {why}",
                        wire::PROTOCOL_VERSION
                    )));
                }
                Ok(Probe::Legacy(why)) => {
                    tracing::debug!(%why, "a 2025-11-25 server: initialize");
                    // The modern attempt's transport has no session: start afresh.
                    reopen(Revision::V2025_11_25, &mut rpc, &mut transport)?;
                }
                Err(e) => {
                    rpc.peer.close();
                    return Err(e);
                }
            }
        }
        if let Some(discover) = discovered {
            if wants_legacy(&discover) {
                reopen(Revision::V2025_11_25, &mut rpc, &mut transport)?;
                match initialize(&rpc, &config).await {
                    Ok(init) => {
                        tracing::debug!(
                            "a server of both eras: 2025-11-25, as the configuration prefers"
                        );
                        // The endpoint stays cached as modern with its `DiscoverResult`:
                        // the next client chooses by its own preference.
                        return Ok(Self::legacy(config, rpc, transport, init, url));
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "a server of both eras refused initialize: 2026-07-28");
                        reopen(Revision::V2026_07_28, &mut rpc, &mut transport)?;
                    }
                }
            }
            return Ok(Self::modern(&config, rpc, transport, &discover, url));
        }
        let init = match initialize(&rpc, &config).await {
            Ok(i) => i,
            Err(ClientError::Rpc { error, .. })
                // A modern server that does not take `initialize` (FastMCP 4 on a
                // connection that already served `server/discover`).
                if modern::initialize_refused_as_modern(config.protocol, &error) =>
            {
                // The probe went unanswered (a server slow to start: on stdio it reads the
                // probe late and answers it after our timeout), and the server now
                // refuses `initialize` as a modern one: it is modern after all. Spec
                // (versioning): "a recognized modern JSON-RPC error (such as
                // `UnsupportedProtocolVersionError`) identifies a modern server".
                tracing::debug!(
                    code = error.code,
                    "initialize refused by a 2026-07-28 server: server/discover again"
                );
                reopen(Revision::V2026_07_28, &mut rpc, &mut transport)?;
                return match modern::probe(&rpc, &config).await {
                    Ok(Probe::Modern(discover)) => {
                        if let Some(u) = &url {
                            cache.put(u, token.as_deref(), Known::Discover(discover.clone()));
                        }
                        Ok(Self::modern(&config, rpc, transport, &discover, url))
                    }
                    Ok(Probe::Legacy(why)) => {
                        rpc.peer.close();
                        Err(ClientError::Protocol(format!(
                            "the server refused initialize as a {} server but then: {why}",
                            wire::PROTOCOL_VERSION
                        )))
                    }
                    Err(e) => {
                        rpc.peer.close();
                        Err(e)
                    }
                };
            }
            Err(e) => {
                rpc.peer.close();
                return Err(e);
            }
        };
        if let Some(u) = &url {
            cache.put(u, token.as_deref(), Known::Initialize);
        }
        Ok(Self::legacy(config, rpc, transport, init, url))
    }

    /// A client of a 2025-11-25 server that answered `initialize`.
    fn legacy(
        config: ClientConfig,
        rpc: Rpc,
        transport: Transport,
        init: InitializeResult,
        url: Option<String>,
    ) -> Self {
        let client_capabilities = config.capabilities();
        Self::with(
            config,
            rpc,
            transport,
            (Revision::V2025_11_25, url),
            init,
            client_capabilities,
        )
    }

    /// A client of a 2026-07-28 server that answered `discover`.
    fn modern(
        config: &ClientConfig,
        rpc: Rpc,
        transport: Transport,
        discover: &Value,
        url: Option<String>,
    ) -> Self {
        let init = InitializeResult {
            protocol_version: wire::PROTOCOL_VERSION.to_owned(),
            capabilities: discover
                .get("capabilities")
                .cloned()
                .unwrap_or_else(|| json!({})),
            server_info: modern::server_info(discover).unwrap_or(Value::Null),
            instructions: discover
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_owned),
            raw: discover.clone(),
        };
        tracing::debug!(server = %init.server_info, "2026-07-28 server");
        let caps = config.request_capabilities();
        Self::with(
            config.clone(),
            rpc,
            transport,
            (Revision::V2026_07_28, url),
            init,
            caps,
        )
    }

    fn with(
        config: ClientConfig,
        rpc: Rpc,
        transport: Transport,
        (revision, cached_as): (Revision, Option<String>),
        init: InitializeResult,
        client_capabilities: Value,
    ) -> Self {
        let meta = revision
            .is_stateless()
            .then(|| modern::request_meta(&config));
        Self {
            inner: Arc::new(Inner {
                rpc,
                revision,
                cached_as,
                meta,
                max_input_rounds: config.max_input_rounds,
                init,
                client_capabilities,
                request_timeout: config.request_timeout,
                call_timeout: config.call_timeout,
                tools: Mutex::new(None),
                transport: Mutex::new(Some(transport)),
                next_token: AtomicU64::new(1),
            }),
        }
    }
}

/// `initialize` (and `notifications/initialized` once it succeeded).
async fn initialize(rpc: &Rpc, config: &ClientConfig) -> Result<InitializeResult, ClientError> {
    let params = json!({
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": config.capabilities(),
        "clientInfo": { "name": config.name, "version": config.version },
    });
    let init = rpc
        .request(methods::INITIALIZE, Some(params), config.request_timeout)
        .await
        .and_then(|v| read_initialize(&v))?;
    rpc.notify(methods::INITIALIZED, None).await;
    tracing::debug!(version = %init.protocol_version, server = %init.server_info, "initialized");
    Ok(init)
}

fn read_initialize(v: &Value) -> Result<InitializeResult, ClientError> {
    let version = v
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ClientError::Protocol(format!("initialize without `protocolVersion`: {v}"))
        })?;
    // Spec (lifecycle): "If the client does not support the version in the server's
    // response, it SHOULD disconnect."
    if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
        return Err(ClientError::Protocol(format!(
            "the server chose protocol version {version}, which this client does not speak"
        )));
    }
    Ok(InitializeResult {
        protocol_version: version.to_owned(),
        capabilities: v.get("capabilities").cloned().unwrap_or_else(|| json!({})),
        server_info: v.get("serverInfo").cloned().unwrap_or(Value::Null),
        instructions: v
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned),
        raw: v.clone(),
    })
}
