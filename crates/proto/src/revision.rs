//! The protocol revisions mcp-tasks speaks, as one ordered type ([`Revision`]), and the
//! choice of one a client or gateway makes ([`RevisionChoice`]).
//!
//! Code asks a revision for a capability ([`Revision::is_stateless`],
//! [`Revision::tasks_are_extension`], [`Revision::has_standard_headers`], ...) rather than comparing it with a named one, so
//! that a later revision is one more variant, not one more boolean.
//!
//! Spec (versioning, terminology): "**Modern**: protocol versions that convey version,
//! identity, and capabilities as per-request metadata (revision `2026-07-28` and later).
//! **Legacy**: protocol versions that establish a session with an `initialize` handshake
//! (`2025-11-25` and earlier)."

use std::fmt;
use std::str::FromStr;

/// A dated MCP revision, ordered by date.
///
/// [`Revision::V2025_11_25`] stands for every revision served after an `initialize`
/// handshake (the session negotiates which one of 2025-11-25, 2025-06-18 and 2025-03-26: see
/// [`crate::mcp::SUPPORTED_PROTOCOL_VERSIONS`]); each later variant is one revision whose
/// requests name it in their `_meta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Revision {
    /// MCP 2025-11-25 (and the earlier handshake revisions): a session opened by
    /// `initialize`; tasks of the core protocol.
    V2025_11_25,
    /// MCP 2026-07-28: no handshake, `_meta` on every request; tasks through the
    /// extension `io.modelcontextprotocol/tasks` (SEP-2663).
    V2026_07_28,
}

impl Revision {
    /// The newest revision mcp-tasks speaks.
    pub const LATEST: Revision = Revision::V2026_07_28;
    /// Every revision, oldest first.
    pub const ALL: [Revision; 2] = [Revision::V2025_11_25, Revision::V2026_07_28];

    /// The dated name, as on the wire (`protocolVersion`, `MCP-Protocol-Version`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether requests of this revision carry their version, identity and capabilities
    /// in `_meta` and need no session (no `initialize`, no `Mcp-Session-Id`).
    ///
    /// Spec (basic, statelessness): "Servers MUST NOT rely on prior requests over the
    /// same connection to establish context (e.g., capabilities, protocol version, client
    /// identity). Every request supplies this metadata in its `_meta` field."
    pub const fn is_stateless(self) -> bool {
        matches!(self, Revision::V2026_07_28)
    }

    /// Whether a session is opened by an `initialize` handshake (the negation of
    /// [`Self::is_stateless`]).
    ///
    /// Spec (versioning): "An `initialize` request selects legacy semantics, scoped to
    /// the stdio process (stdio) or the session (HTTP)".
    pub const fn has_initialize(self) -> bool {
        !self.is_stateless()
    }

    /// Whether tasks are the extension `io.modelcontextprotocol/tasks` (SEP-2663): the
    /// server decides which request becomes a task, results come inline in `tasks/get`,
    /// and there is no `tasks/result`, no `tasks/list`, no client-hosted task.
    ///
    /// Spec (SEP-2663): "`tasks/result` is removed; clients calling it MUST receive
    /// `-32601` (Method Not Found)."
    pub const fn tasks_are_extension(self) -> bool {
        matches!(self, Revision::V2026_07_28)
    }

    /// Whether every Streamable HTTP request carries `MCP-Protocol-Version`, `Mcp-Method`
    /// and (where the method has one) `Mcp-Name`, checked against the body.
    ///
    /// Spec (streamable HTTP): "`Mcp-Method` | `method` | All requests".
    pub const fn has_standard_headers(self) -> bool {
        matches!(self, Revision::V2026_07_28)
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a revision we speak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRevision(pub String);

impl fmt::Display for UnknownRevision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown protocol revision `{}` (expected ", self.0)?;
        for (i, r) in Revision::ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(r.as_str())?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for UnknownRevision {}

impl FromStr for Revision {
    type Err = UnknownRevision;

    /// The dated name exactly (`2025-11-25`, `2026-07-28`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Revision::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRevision(s.to_owned()))
    }
}

/// Which revision to speak: found by asking the peer, or fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RevisionChoice {
    /// Detect the peer's revision.
    ///
    /// Spec (versioning): "A client that needs to interoperate with both kinds of servers
    /// detects the server's era with transport-specific mechanics".
    #[default]
    Auto,
    /// This revision only: a peer that does not speak it is an error.
    Fixed(Revision),
}

impl RevisionChoice {
    /// The fixed revision, if any.
    pub fn fixed(self) -> Option<Revision> {
        match self {
            RevisionChoice::Auto => None,
            RevisionChoice::Fixed(r) => Some(r),
        }
    }

    /// The name on a command line: `auto` or the dated name.
    pub fn as_str(self) -> &'static str {
        match self {
            RevisionChoice::Auto => "auto",
            RevisionChoice::Fixed(r) => r.as_str(),
        }
    }
}

impl From<Revision> for RevisionChoice {
    fn from(r: Revision) -> Self {
        RevisionChoice::Fixed(r)
    }
}

impl fmt::Display for RevisionChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RevisionChoice {
    type Err = UnknownRevision;

    /// `auto`, a dated name, or the generation words of the command lines and
    /// configuration files before revisions had one type: `legacy` (2025-11-25) and
    /// `modern` (2026-07-28).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(RevisionChoice::Auto),
            "legacy" => Ok(RevisionChoice::Fixed(Revision::V2025_11_25)),
            "modern" => Ok(RevisionChoice::Fixed(Revision::V2026_07_28)),
            _ => s.parse().map(RevisionChoice::Fixed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order() {
        for r in Revision::ALL {
            assert_eq!(r.as_str().parse::<Revision>(), Ok(r));
            assert_eq!(r.to_string(), r.as_str());
        }
        assert!(Revision::V2025_11_25 < Revision::V2026_07_28);
        assert_eq!(Revision::ALL.last(), Some(&Revision::LATEST));
        assert!("modern".parse::<Revision>().is_err());
        let e = "1900-01-01".parse::<Revision>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown protocol revision `1900-01-01` (expected 2025-11-25, 2026-07-28)"
        );
    }

    #[test]
    fn capabilities() {
        let old = Revision::V2025_11_25;
        let new = Revision::V2026_07_28;
        assert!(!old.is_stateless() && new.is_stateless());
        assert!(old.has_initialize() && !new.has_initialize());
        assert!(!old.tasks_are_extension() && new.tasks_are_extension());
        assert!(!old.has_standard_headers() && new.has_standard_headers());
    }

    #[test]
    fn choices() {
        for (word, choice) in [
            ("auto", RevisionChoice::Auto),
            ("legacy", RevisionChoice::Fixed(Revision::V2025_11_25)),
            ("modern", RevisionChoice::Fixed(Revision::V2026_07_28)),
            ("2025-11-25", RevisionChoice::Fixed(Revision::V2025_11_25)),
            ("2026-07-28", RevisionChoice::Fixed(Revision::V2026_07_28)),
        ] {
            assert_eq!(word.parse::<RevisionChoice>(), Ok(choice), "{word}");
        }
        assert!("x".parse::<RevisionChoice>().is_err());
        assert_eq!(RevisionChoice::default(), RevisionChoice::Auto);
        assert_eq!(RevisionChoice::Auto.fixed(), None);
        assert_eq!(
            RevisionChoice::from(Revision::LATEST).to_string(),
            "2026-07-28"
        );
    }
}
