//! Just enough JSON to write zkr's output by hand (no serde): escaped strings and a small
//! object builder that keeps fields in the order they are added.

use std::fmt::Write as _;

/// `text` as a JSON string literal, quotes included (RFC 8259: `"` and `\` escaped, control
/// characters as `\n`, `\t`, ... or `\u00XX`; everything else as is, in UTF-8).
pub fn string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON object written field by field: `Object::new().str("a", "x").num("b", 1).finish()`.
#[derive(Debug, Default)]
pub struct Object {
    body: String,
}

impl Object {
    pub fn new() -> Self {
        Self::default()
    }

    fn key(&mut self, key: &str) {
        if !self.body.is_empty() {
            self.body.push(',');
        }
        self.body.push_str(&string(key));
        self.body.push(':');
    }

    /// A string field.
    pub fn str(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        self.body.push_str(&string(value));
        self
    }

    /// A string field, or `null`.
    pub fn opt_str(self, key: &str, value: Option<&str>) -> Self {
        match value {
            Some(v) => self.str(key, v),
            None => self.raw(key, "null"),
        }
    }

    /// An integer field.
    pub fn num(self, key: &str, value: i64) -> Self {
        self.raw(key, &value.to_string())
    }

    /// A boolean field.
    pub fn bool(self, key: &str, value: bool) -> Self {
        self.raw(key, if value { "true" } else { "false" })
    }

    /// A field whose value is already JSON (an array, a nested object).
    pub fn raw(mut self, key: &str, json: &str) -> Self {
        self.key(key);
        self.body.push_str(json);
        self
    }

    /// The object's text.
    pub fn finish(self) -> String {
        format!("{{{}}}", self.body)
    }
}

/// A JSON array of already-JSON elements.
pub fn array(elements: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = elements.into_iter().collect();
    format!("[{}]", items.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_json_requires() {
        assert_eq!(string("plain"), r#""plain""#);
        assert_eq!(string(r#"a "quoted" \ path"#), r#""a \"quoted\" \\ path""#);
        assert_eq!(string("line\nfeed\r\ttab"), r#""line\nfeed\r\ttab""#);
        assert_eq!(string("\u{0}\u{1}\u{1f}\u{8}\u{c}"), r#""\u0000\u0001\u001f\b\f""#);
        assert_eq!(string("\u{7f}é→🦀"), "\"\u{7f}é→🦀\"");
        assert_eq!(string(""), r#""""#);
        assert_eq!(string("</script>/"), r#""</script>/""#);
    }

    #[test]
    fn builds_objects_and_arrays() {
        let o = Object::new().str("name", "x\"y").num("n", -5).bool("ok", true).opt_str("none", None);
        assert_eq!(o.finish(), r#"{"name":"x\"y","n":-5,"ok":true,"none":null}"#);
        assert_eq!(Object::new().finish(), "{}");
        assert_eq!(array(vec![]), "[]");
        assert_eq!(array(vec!["1".into(), r#"{"a":1}"#.into()]), r#"[1,{"a":1}]"#);
        let nested = Object::new().raw("items", &array(vec![Object::new().num("a", 1).finish()])).finish();
        assert_eq!(nested, r#"{"items":[{"a":1}]}"#);
    }
}
