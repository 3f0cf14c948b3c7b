//! How a [`crate::PgStore`] is opened: the `postgres://` store URL and its options.

use std::str::FromStr;
use std::time::Duration;

use mcp_tasks_core::StoreError;
use tokio_postgres::config::Host;

/// The default bound of the write queue ([`PgOptions::write_queue`]).
pub const WRITE_QUEUE: usize = 1024;

/// How many writer tasks flush the write queue by default (each on its own pooled
/// connection; [`PgOptions::writers`]).
pub(crate) const WRITERS: usize = 2;

/// Options of a [`crate::PgStore`] beyond the connection settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    /// Most connections of the pool (`?pool=N`). A call waits for a free connection.
    pub pool: usize,
    /// How long one statement may run before PostgreSQL cancels it
    /// (`?statement_timeout=5s`; `0` is no limit). A statement that times out fails its
    /// call with [`StoreError::Unavailable`], and only that call.
    pub statement_timeout: Duration,
    /// How long [`crate::PgStore::open`] keeps retrying, with backoff, a database that
    /// cannot be reached (`?connect_for=30s`) before it refuses to start.
    pub connect_for: Duration,
    /// The safety-net poll of the wake-ups (`?fallback_poll=2s`): this often, every waiter
    /// of this store is woken to re-read its task, in case a notification was missed
    /// (while the listener connection was down, or before a dead connection was noticed).
    /// Changes are pushed with LISTEN/NOTIFY; the poll is not how waiters normally wake.
    pub fallback_poll: Duration,
    /// The PostgreSQL schema holding the store's tables (`?schema=NAME`, default
    /// `mcp_tasks`), created when missing. Several stores may share one database in
    /// separate schemas.
    pub schema: String,
    /// How many creations and terminal transitions wait at most to be written by group
    /// commit (`?write_queue=N`, default [`crate::WRITE_QUEUE`], 1,024): past it a caller
    /// waits for room. [`Self::writers`] writers take them in batches of up to 64, one transaction each.
    pub write_queue: usize,
    /// How many writers take the queued writes (`?writers=N`, 1 to 64, default 2), each
    /// on a pooled connection of its own (two while its batch holds creations and
    /// terminal transitions).
    pub writers: usize,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            pool: 16,
            statement_timeout: Duration::from_secs(5),
            connect_for: Duration::from_secs(30),
            fallback_poll: Duration::from_secs(2),
            schema: "mcp_tasks".into(),
            write_queue: WRITE_QUEUE,
            writers: WRITERS,
        }
    }
}

/// A parsed store URL: the connection settings and the store's options.
#[derive(Clone)]
pub struct PgConfig {
    /// The connection settings (host, port, user, password, database, ...).
    pub pg: tokio_postgres::Config,
    /// The store's options.
    pub options: PgOptions,
}

impl std::fmt::Debug for PgConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConfig")
            .field("target", &self.target())
            .field("options", &self.options)
            .finish()
    }
}

/// Whether `url` names a PostgreSQL store (`postgres://` or `postgresql://`).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

impl PgConfig {
    /// Parse a store URL `postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?OPTIONS]` (or
    /// `postgresql://...`). The store's own options are `pool=N`, `statement_timeout=5s`,
    /// `connect_for=30s`, `fallback_poll=2s`, `write_queue=1024`, `writers=N` and `schema=NAME` (durations in humantime
    /// syntax); any other option is passed to the PostgreSQL client (`connect_timeout`,
    /// `application_name`, `keepalives_idle`, ...). With no password in the URL, the
    /// password comes from `PGPASSWORD` when it is set.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] saying what is wrong; the message never contains the
    /// password.
    pub fn parse(url: &str) -> Result<Self, StoreError> {
        Self::parse_with_env(url, std::env::var("PGPASSWORD").ok())
    }

    fn parse_with_env(url: &str, pgpassword: Option<String>) -> Result<Self, StoreError> {
        let shown = redact(url);
        let bad = |why: String| StoreError::Unavailable(format!("bad store URL {shown}: {why}"));
        if !is_postgres_url(url) {
            return Err(bad(
                "it must start with `postgres://` or `postgresql://`".into()
            ));
        }
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, q),
            None => (url, ""),
        };
        let mut options = PgOptions::default();
        let mut passed = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let duration = |v: &str| {
                humantime::parse_duration(v)
                    .or_else(|e| if v == "0" { Ok(Duration::ZERO) } else { Err(e) })
                    .map_err(|e| bad(format!("{k} must be a duration such as 5s, not {v:?}: {e}")))
            };
            match k {
                "pool" => {
                    options.pool =
                        v.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                            bad(format!("pool must be a number above 0, not {v:?}"))
                        })?;
                }
                "statement_timeout" => options.statement_timeout = duration(v)?,
                "write_queue" => {
                    options.write_queue = v.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                        bad(format!("write_queue must be a number above 0, not {v:?}"))
                    })?;
                }
                "writers" => {
                    options.writers =
                        v.parse()
                            .ok()
                            .filter(|n| (1..=64).contains(n))
                            .ok_or_else(|| {
                                bad(format!("writers must be a number from 1 to 64, not {v:?}"))
                            })?;
                }
                "connect_for" => options.connect_for = duration(v)?,
                "fallback_poll" => {
                    options.fallback_poll = duration(v)?;
                    if options.fallback_poll.is_zero() {
                        return Err(bad("fallback_poll must be above 0".into()));
                    }
                }
                "schema" => {
                    if !valid_schema(v) {
                        return Err(bad(format!(
                            "schema must be 1 to 48 lowercase letters, digits or `_`, \
                             starting with a letter or `_`, not {v:?}"
                        )));
                    }
                    options.schema = v.to_owned();
                }
                "password" => {
                    return Err(bad(
                        "give the password in the URL's user part or in PGPASSWORD".into(),
                    ));
                }
                _ => passed.push(pair),
            }
        }
        let rest = if passed.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", passed.join("&"))
        };
        let mut pg = tokio_postgres::Config::from_str(&rest).map_err(|e| bad(e.to_string()))?;
        if pg.get_user().is_none_or(str::is_empty) {
            return Err(bad("it names no user (postgres://USER@HOST:PORT/DB)".into()));
        }
        if pg.get_hosts().is_empty() {
            return Err(bad("it names no host (postgres://USER@HOST:PORT/DB)".into()));
        }
        if pg.get_dbname().is_none() {
            let user = pg.get_user().unwrap_or_default().to_owned();
            pg.dbname(user);
        }
        if pg.get_password().is_none()
            && let Some(p) = pgpassword.filter(|p| !p.is_empty())
        {
            pg.password(p);
        }
        if pg.get_application_name().is_none() {
            pg.application_name("mcp-tasks");
        }
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(Duration::from_secs(5));
        }
        pg.keepalives_idle(Duration::from_secs(15));
        Ok(Self { pg, options })
    }

    /// `HOST:PORT/DB` (and the user), for messages: never the password.
    pub fn target(&self) -> String {
        let host = match self.pg.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            #[cfg(unix)]
            Some(Host::Unix(p)) => p.display().to_string(),
            None => String::new(),
        };
        let port = self.pg.get_ports().first().copied().unwrap_or(5432);
        format!(
            "{}@{host}:{port}/{}",
            self.pg.get_user().unwrap_or_default(),
            self.pg.get_dbname().unwrap_or_default()
        )
    }

    /// The store as a URL without its password: `postgres://USER@HOST:PORT/DB` (and the
    /// schema when it is not the default one).
    pub fn description(&self) -> String {
        let mut d = format!("postgres://{}", self.target());
        if self.options.schema != PgOptions::default().schema {
            d.push_str("?schema=");
            d.push_str(&self.options.schema);
        }
        d
    }

    /// The settings of one connection of the pool: no JIT compilation (before the URL's
    /// own `options`, which may turn it back on), the schema first on the search path,
    /// the statement timeout, all set in the start-up packet (no extra round trip).
    ///
    /// Why no JIT: the store's statements are short, but the planner's estimates for the
    /// statements of the triggers and batch functions (transition tables, a history table
    /// not yet analyzed) pass `jit_above_cost`, and compiling one costs 6-9 ms (measured
    /// on the history trim of a completion batch: 34 ms with JIT, 0.3 ms without).
    pub(crate) fn pool_config(&self) -> tokio_postgres::Config {
        let mut pg = self.pg.clone();
        let mut opts = String::from("-c jit=off ");
        if let Some(own) = pg.get_options() {
            opts.push_str(own);
            opts.push(' ');
        }
        opts.push_str(&format!(
            "-c search_path={} -c statement_timeout={}",
            self.options.schema,
            self.options.statement_timeout.as_millis()
        ));
        pg.options(opts);
        pg
    }
}

fn valid_schema(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && s.len() <= 48
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// `url` with its secrets (the password between `user:` and `@`, secret query
/// parameters) replaced by `***`.
pub use mcp_tasks_proto::logged::redact_url as redact;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse() {
        let c = PgConfig::parse_with_env(
            "postgres://alice:s3cret@db.example:6543/tasks?pool=4&statement_timeout=250ms&schema=t1&write_queue=8&writers=3",
            None,
        )
        .unwrap();
        assert_eq!(c.target(), "alice@db.example:6543/tasks");
        assert_eq!(
            c.description(),
            "postgres://alice@db.example:6543/tasks?schema=t1"
        );
        assert_eq!(c.pg.get_password(), Some(&b"s3cret"[..]));
        assert_eq!(c.options.pool, 4);
        assert_eq!(c.options.statement_timeout, Duration::from_millis(250));
        assert_eq!(c.options.schema, "t1");
        assert_eq!(c.options.write_queue, 8);
        assert_eq!(c.options.writers, 3);
        assert_eq!(
            c.pool_config().get_options(),
            Some("-c jit=off -c search_path=t1 -c statement_timeout=250")
        );
        // postgresql:// too; the password from PGPASSWORD; the database defaults to the user.
        let c = PgConfig::parse_with_env("postgresql://bob@h", Some("pw".into())).unwrap();
        assert_eq!(c.target(), "bob@h:5432/bob");
        assert_eq!(c.pg.get_password(), Some(&b"pw"[..]));
        assert_eq!(c.options, PgOptions::default());
        // The URL's password wins over PGPASSWORD.
        let c = PgConfig::parse_with_env("postgres://u:url@h/d", Some("env".into())).unwrap();
        assert_eq!(c.pg.get_password(), Some(&b"url"[..]));
        // Options of the client pass through.
        let c =
            PgConfig::parse_with_env("postgres://u@h/d?application_name=x&pool=2", None).unwrap();
        assert_eq!(c.pg.get_application_name(), Some("x"));
    }

    #[test]
    fn bad_urls_are_refused_without_the_password() {
        // Each option with a bad value, then URLs bad in themselves.
        let options = "pool=0 pool=many write_queue=0 writers=0 writers=65 \
                       statement_timeout=soon schema=Bad-Name nonsense=1";
        let with_options = options
            .split_whitespace()
            .map(|o| format!("postgres://u:hunter2@h/d?{o}"));
        let urls = [
            "postgres://u:hunter2@h:notaport/d",
            "postgres://:hunter2@h/d",
            "mysql://u:hunter2@h/d",
        ];
        for bad in with_options.chain(urls.map(String::from)) {
            let bad = bad.as_str();
            let e = PgConfig::parse_with_env(bad, None).unwrap_err().to_string();
            assert!(!e.contains("hunter2"), "{bad}: {e}");
            assert!(e.contains("bad store URL"), "{bad}: {e}");
        }
        assert_eq!(
            redact("postgres://u:pw@h:1/d?x=1"),
            "postgres://u:***@h:1/d?x=1"
        );
        assert_eq!(redact("postgres://u@h/d"), "postgres://u@h/d");
    }
}
