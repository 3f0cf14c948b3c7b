//! A form elicitation's `requestedSchema` read as fields, and each field's prompt.

use serde_json::{Map, Value};

/// One choice of an enum.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Choice {
    /// The value sent.
    pub(crate) value: String,
    /// What the user sees.
    pub(crate) label: String,
}

/// What a field accepts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// A string, maybe of a `format`, maybe bounded in length.
    Text(TextRules),
    /// A number (`integer` for whole numbers only), maybe bounded.
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of the choices.
    Choice(Vec<Choice>),
    /// Any of the choices (an array).
    Choices {
        options: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) kind: Kind,
    pub(crate) required: bool,
    pub(crate) default: Option<Value>,
}

fn text_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Choices from `enum` (+ `enumNames`) or from `oneOf`/`anyOf` of `{const, title}`.
fn choices(prop: &Value) -> Option<Vec<Choice>> {
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        let names = prop.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let value = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map_or_else(|| value.clone(), str::to_owned);
                    Choice { value, label }
                })
                .collect(),
        );
    }
    let list = prop
        .get("oneOf")
        .or_else(|| prop.get("anyOf"))
        .and_then(Value::as_array)?;
    let options: Vec<Choice> = list
        .iter()
        .filter_map(|o| {
            let c = o.get("const")?;
            let value = c.as_str().map_or_else(|| c.to_string(), str::to_owned);
            let label = text_of(o, "title").unwrap_or_else(|| value.clone());
            Some(Choice { value, label })
        })
        .collect();
    (!options.is_empty()).then_some(options)
}

fn kind_of(name: &str, prop: &Value) -> Result<Kind, String> {
    let ty = prop.get("type").and_then(Value::as_str);
    if ty == Some("array") {
        let items = prop.get("items").unwrap_or(&Value::Null);
        let Some(options) = choices(items) else {
            return Err(format!(
                "field `{name}`: an array without enumerated items cannot be asked"
            ));
        };
        return Ok(Kind::Choices {
            options,
            min_items: prop.get("minItems").and_then(Value::as_u64),
            max_items: prop.get("maxItems").and_then(Value::as_u64),
        });
    }
    if let Some(options) = choices(prop) {
        return Ok(Kind::Choice(options));
    }
    match ty {
        Some("string") | None => Ok(Kind::Text(TextRules {
            format: text_of(prop, "format"),
            min_length: prop.get("minLength").and_then(Value::as_u64),
            max_length: prop.get("maxLength").and_then(Value::as_u64),
        })),
        Some(t @ ("number" | "integer")) => Ok(Kind::Number {
            integer: t == "integer",
            minimum: prop.get("minimum").and_then(Value::as_f64),
            maximum: prop.get("maximum").and_then(Value::as_f64),
        }),
        Some("boolean") => Ok(Kind::Boolean),
        Some(other) => Err(format!(
            "field `{name}`: type `{other}` cannot be asked at a prompt"
        )),
    }
}

/// The fields of a `requestedSchema`: the required ones first (in `required` order),
/// then the others by name.
///
/// # Errors
/// A property of a type no prompt can ask.
pub(crate) fn form(schema: Option<&Value>) -> Result<Vec<Field>, String> {
    let empty = Map::new();
    let props = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names: Vec<&String> = props.keys().collect();
    names.sort_by_key(|n| {
        (
            required.iter().position(|r| r == n).unwrap_or(usize::MAX),
            (*n).clone(),
        )
    });
    names
        .into_iter()
        .map(|name| {
            let prop = &props[name];
            Ok(Field {
                name: name.clone(),
                title: text_of(prop, "title"),
                description: text_of(prop, "description"),
                kind: kind_of(name, prop)?,
                required: required.contains(&name.as_str()),
                default: prop.get("default").cloned(),
            })
        })
        .collect()
}

pub(super) fn bound(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        x.to_string()
    }
}

/// What a text answer must be: of `format` (`date`, `date-time`, `email`, `uri`), of
/// `min_length` to `max_length` characters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TextRules {
    pub(crate) format: Option<String>,
    pub(crate) min_length: Option<u64>,
    pub(crate) max_length: Option<u64>,
}

impl TextRules {
    /// The prompt's hints: `text`, the format, the length bounds.
    fn hints(&self, hints: &mut Vec<String>) {
        hints.push("text".into());
        if let Some(f) = &self.format {
            hints.push(match f.as_str() {
                "date" => "date YYYY-MM-DD".into(),
                "date-time" => "date-time YYYY-MM-DDThh:mm:ssZ".into(),
                other => other.into(),
            });
        }
        match (self.min_length, self.max_length) {
            (Some(a), Some(b)) => hints.push(format!("{a}-{b} characters")),
            (Some(a), None) => hints.push(format!("at least {a} characters")),
            (None, Some(b)) => hints.push(format!("at most {b} characters")),
            (None, None) => {}
        }
    }
}

impl Field {
    /// What the prompt says: `label (hints) [default]: `.
    pub(crate) fn prompt(&self) -> String {
        let mut hints: Vec<String> = Vec::new();
        match &self.kind {
            Kind::Text(rules) => rules.hints(&mut hints),
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                hints.push(if *integer { "integer" } else { "number" }.into());
                match (minimum, maximum) {
                    (Some(a), Some(b)) => hints.push(format!("{} to {}", bound(*a), bound(*b))),
                    (Some(a), None) => hints.push(format!("≥ {}", bound(*a))),
                    (None, Some(b)) => hints.push(format!("≤ {}", bound(*b))),
                    (None, None) => {}
                }
            }
            Kind::Boolean => hints.push("y/n".into()),
            Kind::Choice(options) => hints.push(format!("1-{}", options.len())),
            Kind::Choices { options, .. } => {
                hints.push(format!("any of 1-{}, comma-separated", options.len()));
            }
        }
        if self.required {
            hints.push("required".into());
        }
        let label = self.title.as_deref().unwrap_or(&self.name);
        let mut p = format!("{label} ({})", hints.join(", "));
        if let Some(d) = &self.default {
            p.push_str(&format!(" [{}]", self.show(d)));
        }
        p.push_str(": ");
        p
    }

    /// A value as the user would type it.
    fn show(&self, v: &Value) -> String {
        match (&self.kind, v) {
            (Kind::Boolean, Value::Bool(b)) => if *b { "y" } else { "n" }.into(),
            (Kind::Choices { options, .. }, Value::Array(vs)) => vs
                .iter()
                .map(|x| Self::show_choice(options, x))
                .collect::<Vec<_>>()
                .join(","),
            (Kind::Choice(options), x) => Self::show_choice(options, x),
            (_, Value::String(s)) => s.clone(),
            (_, other) => other.to_string(),
        }
    }

    fn show_choice(options: &[Choice], v: &Value) -> String {
        let s = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
        options
            .iter()
            .find(|c| c.value == s)
            .map_or(s, |c| c.label.clone())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "minLength": 2},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
                "score": {"type": "number"},
                "subscribe": {"type": "boolean", "default": false},
                "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 2},
            },
            "required": ["subscribe", "name", "color"],
        })
    }

    pub(crate) fn field(name: &str) -> Field {
        form(Some(&schema()))
            .unwrap()
            .into_iter()
            .find(|f| f.name == name)
            .unwrap()
    }

    #[test]
    fn required_fields_come_first_in_their_order() {
        let names: Vec<String> = form(Some(&schema()))
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(
            names,
            [
                "subscribe",
                "name",
                "color",
                "age",
                "email",
                "score",
                "size",
                "tags"
            ]
        );
        assert!(form(None).unwrap().is_empty());
        assert!(form(Some(&json!({"properties": {"x": {"type": "object"}}}))).is_err());
    }

    #[test]
    fn prompts_show_hints_and_defaults() {
        assert_eq!(
            field("name").prompt(),
            "Name (text, at least 2 characters, required): "
        );
        assert_eq!(field("email").prompt(), "email (text, email): ");
        assert_eq!(field("age").prompt(), "age (integer, 0 to 150) [30]: ");
        assert_eq!(
            field("subscribe").prompt(),
            "subscribe (y/n, required) [n]: "
        );
        assert_eq!(field("color").prompt(), "color (1-2, required): ");
        assert_eq!(
            field("tags").prompt(),
            "tags (any of 1-3, comma-separated): "
        );
    }
}
