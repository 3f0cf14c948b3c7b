//! What a log line may quote of what a client sent: every client-supplied string (a task
//! id, a request id, a method or tool name, `clientInfo`, an `Origin`) goes into a log line
//! or an audit line through [`capped`], which keeps at most [`LOG_FIELD_MAX`] bytes of it
//! and says that it was cut; a secret that identifies (a session id) goes in as its
//! [`digest`].

use std::fmt;

use sha2::Digest as _;

/// Most bytes of one client-supplied string a log line quotes.
pub const LOG_FIELD_MAX: usize = 256;

/// A string as a log line shows it (see [`capped`]).
#[derive(Clone, Copy)]
pub struct Capped<'a>(&'a str);

/// `s` as a log line quotes it: whole when it is at most [`LOG_FIELD_MAX`] bytes, else its
/// first bytes (up to a character boundary) and `…(cut, N bytes)`, N its whole length.
pub fn capped(s: &str) -> Capped<'_> {
    Capped(s)
}

impl Capped<'_> {
    /// The kept part, and the whole length when something was cut.
    fn parts(&self) -> (&str, Option<usize>) {
        let s = self.0;
        if s.len() <= LOG_FIELD_MAX {
            return (s, None);
        }
        let mut end = LOG_FIELD_MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        (&s[..end], Some(s.len()))
    }

    /// As an owned string (for a field that outlives the line, an audit event's).
    pub fn owned(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Capped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kept, cut) = self.parts();
        f.write_str(kept)?;
        match cut {
            Some(n) => write!(f, "…(cut, {n} bytes)"),
            None => Ok(()),
        }
    }
}

impl fmt::Debug for Capped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kept, cut) = self.parts();
        write!(f, "{kept:?}")?;
        match cut {
            Some(n) => write!(f, "…(cut, {n} bytes)"),
            None => Ok(()),
        }
    }
}

/// 16 hex digits of the SHA-256 of `secret`: what a log line shows of a session id (enough
/// to tell sessions apart and follow one through the log, useless to present as the id).
pub fn digest(secret: &str) -> String {
    use std::fmt::Write as _;
    let d = sha2::Sha256::digest(secret.as_bytes());
    let mut hex = String::with_capacity(16);
    for b in d.iter().take(8) {
        // Writing into a `String` cannot fail.
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// `url` without the secrets it may hold, for a log line or an error message: the password
/// of its user info (`postgres://USER:***@...`) and the values of its query parameters
/// whose names say secret (`?password=***`, `?sslpassword=***`, `token`, `key`, `auth`).
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let mut out = match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            format!("{scheme}://{user}:***@{host}")
        }
        _ => format!("{scheme}://{authority}"),
    };
    let Some((path, query)) = tail.split_once('?') else {
        out.push_str(tail);
        return out;
    };
    out.push_str(path);
    out.push('?');
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if secret_parameter(k) => format!("{k}=***"),
            _ => p.to_owned(),
        })
        .collect();
    out.push_str(&params.join("&"));
    out
}

/// A command line (`program` and its `args`) as a log line may show it: URL passwords and
/// secret query parameters redacted ([`redact_url`]), the values of `--x=V` and `X=V`
/// whose name says secret, and the word after such an option (`--token V`, `--password V`,
/// `-p V`) shown as `***`.
pub fn redact_command(program: &str, args: &[String]) -> String {
    let mut out = redact_url(program);
    let mut after_secret_option = false;
    for a in args {
        out.push(' ');
        if after_secret_option && !a.is_empty() && !a.starts_with('-') {
            out.push_str("***");
        } else if a.contains("://") {
            out.push_str(&redact_url(a));
        } else if let Some((name, _)) = a.split_once('=')
            && secret_option(name)
        {
            out.push_str(name);
            out.push_str("=***");
        } else {
            out.push_str(a);
        }
        after_secret_option = a.starts_with('-') && !a.contains('=') && secret_option(a);
    }
    out
}

/// Whether an option or variable of a command (`--db-password`, `-p`, `API_KEY`) takes a
/// secret: its name says pass, secret, token, key, credential or authorization, or it is
/// `-p` (the password option of `mysql` and its kin). A command's options are not ours,
/// so any of these words counts.
pub fn secret_option(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "-p"
        || [
            "pass",
            "pwd",
            "secret",
            "token",
            "key",
            "credential",
            "authorization",
        ]
        .iter()
        .any(|w| n.contains(w))
}

/// Whether a URL's query parameter holds a secret.
fn secret_parameter(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["pass", "secret", "token", "key", "auth"]
        .iter()
        .any(|w| n.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_string_is_cut_and_says_so() {
        assert_eq!(capped("short").to_string(), "short");
        let long = "é".repeat(LOG_FIELD_MAX);
        let shown = capped(&long).to_string();
        assert!(shown.len() < LOG_FIELD_MAX + 40, "{}", shown.len());
        assert!(
            shown.ends_with(&format!("…(cut, {} bytes)", long.len())),
            "{shown}"
        );
        assert!(format!("{:?}", capped(&long)).starts_with("\"é"));
        let exact = "a".repeat(LOG_FIELD_MAX);
        assert_eq!(capped(&exact).to_string(), exact);
    }

    #[test]
    fn a_command_shows_no_secret_option() {
        let args: Vec<String> = [
            "-p",
            "hunter2",
            "--db-password=s3",
            "--verbose",
            "postgres://u:pw@h/db",
            "API_KEY=k",
            "plain",
        ]
        .map(String::from)
        .to_vec();
        let shown = redact_command("mysql", &args);
        assert_eq!(
            shown,
            "mysql -p *** --db-password=*** --verbose postgres://u:***@h/db API_KEY=*** plain"
        );
        for secret in ["hunter2", "s3", ":pw@", "=k"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }

    #[test]
    fn secret_query_parameters_and_passwords_are_redacted() {
        let r = redact_url(
            "postgres://u@db:5432/t?sslmode=require&password=hunter2&sslpassword=s3cr3t",
        );
        assert_eq!(
            r,
            "postgres://u@db:5432/t?sslmode=require&password=***&sslpassword=***"
        );
        assert_eq!(redact_url("postgres://u:pw@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact_url("sqlite:/tmp/x.db"), "sqlite:/tmp/x.db");
    }

    #[test]
    fn a_digest_is_16_hex_digits_and_not_the_secret() {
        let d = digest("secret-session-id");
        assert_eq!(d.len(), 16);
        assert!(d.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(d, digest("another"));
    }
}
