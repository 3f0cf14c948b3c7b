//! An answer typed at a field's prompt, read and checked against the field.

use serde_json::{Value, json};

use super::form::{Choice, Field, Kind, TextRules, bound};

impl TextRules {
    /// Whether `input` is of the length and format asked for.
    ///
    /// # Errors
    /// Why it is not (said to the user, who is asked again).
    fn check(&self, input: &str) -> Result<(), String> {
        let (min, max) = (self.min_length, self.max_length);
        let n = input.chars().count() as u64;
        if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
            return Err(match (min, max) {
                (Some(a), Some(b)) => format!("between {a} and {b} characters, please"),
                (Some(a), None) => format!("at least {a} characters, please"),
                (_, Some(b)) => format!("at most {b} characters, please"),
                (None, None) => unreachable!("a bound was broken"),
            });
        }
        match &self.format {
            Some(f) => check_format(f, input),
            None => Ok(()),
        }
    }
}

impl Field {
    /// Read an answer: `Ok(None)` leaves an optional field out.
    ///
    /// # Errors
    /// Why the answer does not fit (said to the user, who is asked again).
    pub(crate) fn parse(&self, input: &str) -> Result<Option<Value>, String> {
        let input = input.trim();
        if input.is_empty() {
            return match (&self.default, self.required) {
                (Some(d), _) => Ok(Some(d.clone())),
                (None, true) => Err("an answer is required".into()),
                (None, false) => Ok(None),
            };
        }
        match &self.kind {
            Kind::Text(rules) => rules.check(input).map(|()| Some(json!(input))),
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let v = if *integer {
                    let i: i64 = input
                        .parse()
                        .map_err(|_| format!("`{input}` is not a whole number"))?;
                    json!(i)
                } else {
                    let x: f64 = input
                        .parse()
                        .ok()
                        .filter(|x: &f64| x.is_finite())
                        .ok_or_else(|| format!("`{input}` is not a number"))?;
                    json!(x)
                };
                let x = v.as_f64().unwrap_or(0.0);
                if minimum.is_some_and(|m| x < m) || maximum.is_some_and(|m| x > m) {
                    return Err(match (minimum, maximum) {
                        (Some(a), Some(b)) => {
                            format!("from {} to {}, please", bound(*a), bound(*b))
                        }
                        (Some(a), None) => format!("at least {}, please", bound(*a)),
                        (_, Some(b)) => format!("at most {}, please", bound(*b)),
                        (None, None) => unreachable!("a bound was broken"),
                    });
                }
                Ok(Some(v))
            }
            Kind::Boolean => match input.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => Ok(Some(json!(true))),
                "n" | "no" | "false" | "0" => Ok(Some(json!(false))),
                _ => Err("yes or no (y/n), please".into()),
            },
            Kind::Choice(options) => pick(options, input).map(|c| Some(json!(c.value))),
            Kind::Choices {
                options,
                min_items,
                max_items,
            } => {
                let mut picked: Vec<Value> = Vec::new();
                for part in input.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let c = pick(options, part)?;
                    if !picked.contains(&json!(c.value)) {
                        picked.push(json!(c.value));
                    }
                }
                let n = picked.len() as u64;
                if min_items.is_some_and(|m| n < m) || max_items.is_some_and(|m| n > m) {
                    return Err(format!(
                        "choose {} items, please",
                        match (min_items, max_items) {
                            (Some(a), Some(b)) => format!("{a} to {b}"),
                            (Some(a), None) => format!("at least {a}"),
                            (_, Some(b)) => format!("at most {b}"),
                            (None, None) => unreachable!("a bound was broken"),
                        }
                    ));
                }
                Ok(Some(Value::Array(picked)))
            }
        }
    }
}

/// A choice by number (1-based), value or label.
fn pick<'a>(options: &'a [Choice], input: &str) -> Result<&'a Choice, String> {
    if let Ok(n) = input.parse::<usize>()
        && (1..=options.len()).contains(&n)
    {
        return Ok(&options[n - 1]);
    }
    options
        .iter()
        .find(|c| c.value == input)
        .or_else(|| {
            options.iter().find(|c| {
                c.label.eq_ignore_ascii_case(input) || c.value.eq_ignore_ascii_case(input)
            })
        })
        .ok_or_else(|| format!("`{input}` is not one of the choices (1-{})", options.len()))
}

fn check_format(format: &str, s: &str) -> Result<(), String> {
    let ok = match format {
        "email" => s.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains('@')
                && !s.chars().any(char::is_whitespace)
        }),
        "uri" => s.split_once(':').is_some_and(|(scheme, rest)| {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
                && !s.chars().any(char::is_whitespace)
        }),
        "date" => s.len() == 10 && humantime::parse_rfc3339_weak(&format!("{s}T00:00:00Z")).is_ok(),
        "date-time" => s.contains('T') && humantime::parse_rfc3339_weak(s).is_ok(),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(match format {
            "email" => "an email address like name@example.com, please".into(),
            "uri" => "a URI like https://example.com/, please".into(),
            "date" => "a date like 2025-11-25, please".into(),
            "date-time" => "a date and time like 2025-11-25T10:30:00Z, please".into(),
            other => format!("a {other}, please"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::form::tests::field;
    use super::*;

    #[test]
    fn answers_are_typed_and_checked() {
        let name = field("name");
        assert_eq!(name.parse("Ada").unwrap(), Some(json!("Ada")));
        assert!(name.parse("").is_err(), "required");
        assert!(name.parse("A").is_err(), "too short");

        let email = field("email");
        assert_eq!(email.parse("").unwrap(), None, "optional: left out");
        assert!(email.parse("a@b.c").is_ok());
        assert!(email.parse("nope").is_err());
        assert!(email.parse("a@b").is_err());

        let age = field("age");
        assert_eq!(age.parse("").unwrap(), Some(json!(30)), "the default");
        assert_eq!(age.parse(" 42 ").unwrap(), Some(json!(42)));
        assert!(age.parse("4.5").is_err());
        assert!(age.parse("151").is_err());
        assert!(age.parse("-1").is_err());
        assert_eq!(field("score").parse("2.5").unwrap(), Some(json!(2.5)));
        assert!(field("score").parse("NaN").is_err());

        let sub = field("subscribe");
        assert_eq!(sub.parse("y").unwrap(), Some(json!(true)));
        assert_eq!(sub.parse("No").unwrap(), Some(json!(false)));
        assert_eq!(sub.parse("").unwrap(), Some(json!(false)));
        assert!(sub.parse("maybe").is_err());

        let color = field("color");
        assert_eq!(color.parse("2").unwrap(), Some(json!("g")));
        assert_eq!(color.parse("red").unwrap(), Some(json!("r")));
        assert_eq!(color.parse("g").unwrap(), Some(json!("g")));
        assert!(color.parse("3").is_err());
        assert!(color.parse("").is_err());
        assert_eq!(field("size").parse("Large").unwrap(), Some(json!("l")));

        let tags = field("tags");
        assert_eq!(tags.parse("1, c").unwrap(), Some(json!(["a", "c"])));
        assert!(tags.parse("1,2,3").is_err(), "at most 2");
    }

    #[test]
    fn formats_are_checked() {
        assert!(check_format("uri", "https://example.com/x").is_ok());
        assert!(check_format("uri", "example.com").is_err());
        assert!(check_format("date", "2025-11-25").is_ok());
        assert!(check_format("date", "2025-13-01").is_err());
        assert!(check_format("date-time", "2025-11-25T10:30:00Z").is_ok());
        assert!(check_format("date-time", "yesterday").is_err());
        assert!(check_format("something-else", "anything").is_ok());
    }
}
