//! `serve`'s OAuth 2.1 resource server flags (`--oauth-issuer`, `--resource-url`, ...).

use std::time::Duration;

use anyhow::bail;
use clap::Args;
use mcp_tasks_server::http::{OAuth, OAuthConfig};

/// OAuth flags of `serve` over HTTP.
#[derive(Args, Debug, Default)]
pub(crate) struct OAuthArgs {
    /// Accept OAuth 2.1 access tokens (JWTs signed RS256, ES256 or EdDSA) issued by this
    /// authorization server (repeatable; `iss` must match exactly). Its keys are found
    /// through `/.well-known/oauth-authorization-server` or
    /// `/.well-known/openid-configuration`. The principal of a token is `{iss}#{sub}`.
    /// Works beside --auth-tokens.
    #[arg(long = "oauth-issuer", value_name = "URL")]
    issuers: Vec<String>,
    /// This server's canonical resource URI: tokens must name it in `aud`, and the
    /// protected resource metadata gives it. Default `http(s)://{listen address}/mcp`
    /// (required when listening on every interface, or behind a proxy).
    #[arg(long, value_name = "URL", requires = "issuers")]
    resource_url: Option<String>,
    /// The issuer's JWKS URL, instead of discovery (with a single --oauth-issuer).
    #[arg(long = "oauth-jwks", value_name = "URL", requires = "issuers")]
    jwks: Option<String>,
    /// A scope every token must carry (repeatable); without it: 403 insufficient_scope.
    #[arg(long = "oauth-scope", value_name = "SCOPE", requires = "issuers")]
    scopes: Vec<String>,
    /// Least time between two fetches of an issuer's keys (on a token signed with an
    /// unknown key, or after the issuer could not be reached).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::duration::parse)]
    oauth_refetch_interval: Duration,
}

impl OAuthArgs {
    /// The resource server, if any issuer is given.
    pub(crate) fn build(&self) -> anyhow::Result<Option<OAuth>> {
        if self.issuers.is_empty() {
            return Ok(None);
        }
        if self.oauth_refetch_interval.is_zero() {
            bail!("--oauth-refetch-interval: must be longer than 0");
        }
        let mut c = OAuthConfig::new(self.issuers.iter().cloned());
        c.resource = self.resource_url.clone();
        c.jwks = self.jwks.clone();
        c.scopes = self.scopes.clone();
        c.refetch_interval = self.oauth_refetch_interval;
        match OAuth::new(c) {
            Ok(o) => Ok(Some(o)),
            Err(e) => bail!("--oauth-issuer: {e}"),
        }
    }
}
