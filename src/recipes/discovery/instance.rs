//! One registered instance as curator-x-discovery writes it: [`ServiceInstance`], its
//! [`ServiceType`] and [`UriSpec`], the JSON they are stored as, and the checks on names, ids
//! and ports (pure: unit-tested without a server).

use std::time::{SystemTime, UNIX_EPOCH};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How an instance is registered (curator-x-discovery's `ServiceType`).
///
/// # Examples
/// ```
/// use zk_recipes::discovery::ServiceType;
///
/// assert_eq!(serde_json::to_string(&ServiceType::Dynamic).unwrap(), "\"DYNAMIC\"");
/// assert!(ServiceType::Dynamic.is_dynamic());
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ServiceType {
    /// An ephemeral node: gone with its session (and re-created by our registration).
    #[default]
    Dynamic,
    /// A persistent node.
    Static,
    /// A persistent node.
    Permanent,
    /// An ephemeral-sequential node (`ID<seq>`): read, never registered by this crate.
    DynamicSequential,
}

impl ServiceType {
    /// Whether instances of this type live as long as their session (Curator's `isDynamic`).
    pub fn is_dynamic(self) -> bool {
        matches!(self, Self::Dynamic | Self::DynamicSequential)
    }
}

/// A URI template (curator-x-discovery's `UriSpec`), e.g. `{scheme}://{address}:{port}/api`,
/// stored as its parts.
///
/// # Examples
/// ```
/// use zk_recipes::discovery::UriSpec;
///
/// let spec = UriSpec::parse("{scheme}://{address}:{port}");
/// assert_eq!(spec.parts.len(), 5);
/// assert!(spec.parts[0].variable);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UriSpec {
    /// The literal and variable parts, in order.
    #[serde(default)]
    pub parts: Vec<UriSpecPart>,
}

/// One part of a [`UriSpec`]: literal text, or a variable name (without braces).
///
/// # Examples
/// ```
/// use zk_recipes::discovery::{UriSpec, UriSpecPart};
///
/// let spec = UriSpec::parse("{scheme}://{address}:{port}/api");
/// assert_eq!(spec.parts[0], UriSpecPart { value: "scheme".into(), variable: true });
/// assert_eq!(spec.parts[1], UriSpecPart { value: "://".into(), variable: false });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UriSpecPart {
    /// The text, or the variable's name.
    #[serde(default)]
    pub value: String,
    /// Whether `value` names a variable.
    #[serde(default)]
    pub variable: bool,
}

impl UriSpec {
    /// Splits a template into literal text and `{variable}` parts (an unclosed `{` is kept
    /// as text).
    pub fn parse(template: &str) -> Self {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            let (text, var) = match rest.find('{') {
                Some(open) => match rest[open..].find('}') {
                    Some(close) => (&rest[..open], Some(&rest[open + 1..open + close])),
                    None => (rest, None),
                },
                None => (rest, None),
            };
            if !text.is_empty() {
                parts.push(UriSpecPart { value: text.to_string(), variable: false });
            }
            rest = &rest[text.len()..];
            if let Some(var) = var {
                parts.push(UriSpecPart { value: var.to_string(), variable: true });
                rest = &rest[var.len() + 2..];
            }
        }
        Self { parts }
    }
}

/// One instance of a service: the JSON object curator-x-discovery's `JsonInstanceSerializer`
/// stores at `BASE/NAME/ID`, with a payload of type `T` (any `serde` type; use
/// `serde_json::Value` to take any shape).
///
/// # Curator compatibility
/// The fields serialize in Curator's order and spelling — `name, id, address, port, sslPort,
/// payload, registrationTimeUTC, serviceType, uriSpec, enabled` — with `null` for what is
/// unset. The payload is written as `T` serializes: Curator writes its payload with Jackson
/// type information (`"@class": "java.util.LinkedHashMap"` for a map), so a payload meant for
/// a typed Java reader carries its `@class` field (a `serde_json::Value` keeps it; a struct
/// can `#[serde(rename = "@class")]` a field). A Curator reader with a `Map` or `Object`
/// payload class accepts a payload without it. Reading, unknown fields are ignored and
/// missing ones take Curator's defaults (`enabled` true, `serviceType` `DYNAMIC`).
///
/// # Examples
/// ```
/// use zk_recipes::ServiceInstance;
///
/// let instance = ServiceInstance::builder("orders")
///     .id("a1")
///     .address("10.0.0.1")
///     .port(8080)
///     .payload(serde_json::json!({"zone": "eu-1"}))
///     .build()?;
/// let json = String::from_utf8(instance.to_json()?).unwrap();
/// assert!(json.starts_with(r#"{"name":"orders","id":"a1","address":"10.0.0.1","port":8080,"sslPort":null,"payload":{"zone":"eu-1"}"#));
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceInstance<T> {
    /// The service's name (the node `BASE/NAME`).
    #[serde(default)]
    pub name: String,
    /// The instance's id, unique within the service (the node `BASE/NAME/ID`).
    #[serde(default)]
    pub id: String,
    /// Its host name or address.
    #[serde(default)]
    pub address: Option<String>,
    /// Its port.
    #[serde(default)]
    pub port: Option<u16>,
    /// Its TLS port.
    #[serde(default)]
    pub ssl_port: Option<u16>,
    /// What the instance publishes besides its address.
    #[serde(default = "none")]
    pub payload: Option<T>,
    /// When it was registered, in milliseconds since the Unix epoch.
    #[serde(rename = "registrationTimeUTC", default)]
    pub registration_time_utc: i64,
    /// How it is registered.
    #[serde(default)]
    pub service_type: ServiceType,
    /// Its URI template.
    #[serde(default)]
    pub uri_spec: Option<UriSpec>,
    /// Whether it takes requests (Curator's `enabled`, true when absent).
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn none<T>() -> Option<T> {
    None
}

fn yes() -> bool {
    true
}

impl<T> ServiceInstance<T> {
    /// A builder for an instance of service `name`: a random UUID id, registered now,
    /// [`ServiceType::Dynamic`], enabled.
    pub fn builder(name: impl Into<String>) -> ServiceInstanceBuilder<T> {
        ServiceInstanceBuilder {
            instance: ServiceInstance {
                name: name.into(),
                id: uuid::Uuid::new_v4().to_string(),
                address: None,
                port: None,
                ssl_port: None,
                payload: None,
                registration_time_utc: now_millis(),
                service_type: ServiceType::Dynamic,
                uri_spec: None,
                enabled: true,
            },
            port: None,
            ssl_port: None,
        }
    }

    /// The URI its [`uri_spec`](Self::uri_spec) describes (Curator's `buildUriSpec`):
    /// `scheme` is `https` with an SSL port, else `http`; `name`, `id`, `address`, `port`,
    /// `ssl-port`, `registration-time-utc`, `service-type`, `[` and `]` are replaced; an unknown
    /// variable becomes empty. `None` without a URI spec.
    pub fn build_uri(&self) -> Option<String> {
        let spec = self.uri_spec.as_ref()?;
        let opt = |v: Option<u16>| v.map(|p| p.to_string()).unwrap_or_default();
        let value = |name: &str| match name {
            "scheme" => if self.ssl_port.is_some() { "https" } else { "http" }.to_string(),
            "name" => self.name.clone(),
            "id" => self.id.clone(),
            "address" => self.address.clone().unwrap_or_default(),
            "port" => opt(self.port),
            "ssl-port" => opt(self.ssl_port),
            "registration-time-utc" => self.registration_time_utc.to_string(),
            "service-type" => serde_json::to_value(self.service_type)
                .ok()
                .and_then(|v| v.as_str().map(|s| s.to_lowercase()))
                .unwrap_or_default(),
            "[" => "{".to_string(),
            "]" => "}".to_string(),
            _ => String::new(),
        };
        Some(spec.parts.iter().map(|p| if p.variable { value(&p.value) } else { p.value.clone() }).collect())
    }
}

impl<T: Serialize> ServiceInstance<T> {
    /// The instance as Curator's JSON (the node's data).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the payload cannot be written as JSON (a map with
    /// non-string keys, a failing `Serialize`).
    pub fn to_json(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::invalid("payload", format!("the payload is not JSON: {e}")))
    }
}

impl<T: DeserializeOwned> ServiceInstance<T> {
    /// Reads an instance from a node's data (`path` names the node in the error).
    ///
    /// # Errors
    /// [`Error::CorruptData`] when the data is not such a JSON object, or its payload does
    /// not fit `T`.
    pub fn from_json(path: &str, data: &[u8]) -> Result<Self> {
        serde_json::from_slice(data)
            .map_err(|e| Error::CorruptData { path: path.to_string(), reason: format!("not a service instance: {e}") })
    }
}

/// Builds a [`ServiceInstance`]; made by [`ServiceInstance::builder`].
///
/// # Examples
/// ```
/// use zk_recipes::discovery::{ServiceInstance, ServiceType};
///
/// let instance = ServiceInstance::builder("orders")
///     .id("orders-1")
///     .address("10.0.0.7")
///     .port(8080)
///     .payload(serde_json::json!({"zone": "eu-1"}))
///     .service_type(ServiceType::Dynamic)
///     .uri_spec("{scheme}://{address}:{port}")
///     .build()?;
/// assert_eq!(instance.build_uri().as_deref(), Some("http://10.0.0.7:8080"));
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[must_use = "a builder does nothing until built"]
#[derive(Debug, Clone)]
pub struct ServiceInstanceBuilder<T> {
    instance: ServiceInstance<T>,
    port: Option<u32>,
    ssl_port: Option<u32>,
}

impl<T> ServiceInstanceBuilder<T> {
    /// The instance's id (default: a random UUID).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.instance.id = id.into();
        self
    }

    /// Its address.
    pub fn address(mut self, address: impl Into<String>) -> Self {
        self.instance.address = Some(address.into());
        self
    }

    /// Its port (1..=65535, checked by [`build`](Self::build)).
    pub fn port(mut self, port: u32) -> Self {
        self.port = Some(port);
        self
    }

    /// Its TLS port (1..=65535, checked by [`build`](Self::build)).
    pub fn ssl_port(mut self, port: u32) -> Self {
        self.ssl_port = Some(port);
        self
    }

    /// Its payload.
    pub fn payload(mut self, payload: T) -> Self {
        self.instance.payload = Some(payload);
        self
    }

    /// Its type (default [`ServiceType::Dynamic`]).
    pub fn service_type(mut self, service_type: ServiceType) -> Self {
        self.instance.service_type = service_type;
        self
    }

    /// Its URI template (see [`UriSpec::parse`]).
    pub fn uri_spec(mut self, template: &str) -> Self {
        self.instance.uri_spec = Some(UriSpec::parse(template));
        self
    }

    /// Whether it takes requests (default true).
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.instance.enabled = enabled;
        self
    }

    /// Its registration time in milliseconds since the epoch (default: when the builder was
    /// made).
    pub fn registration_time_utc(mut self, millis: i64) -> Self {
        self.instance.registration_time_utc = millis;
        self
    }

    /// The instance.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty name or id, one with `/`, `.` or `..`, or a
    /// port of 0 or above 65535.
    pub fn build(self) -> Result<ServiceInstance<T>> {
        let mut instance = self.instance;
        validate_name("service name", &instance.name)?;
        validate_name("instance id", &instance.id)?;
        instance.port = self.port.map(|p| validate_port("port", p)).transpose()?;
        instance.ssl_port = self.ssl_port.map(|p| validate_port("ssl_port", p)).transpose()?;
        Ok(instance)
    }
}

/// A service name or an instance id is one path segment: not empty, no `/`, not `.` or `..`,
/// no control character.
pub(crate) fn validate_name(what: &'static str, name: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." || name.chars().any(char::is_control) {
        let argument = if what == "instance id" { "id" } else { "name" };
        return Err(Error::invalid(
            argument,
            format!("{what} {name:?} must be one path segment (not empty, no '/', no control characters)"),
        ));
    }
    Ok(())
}

fn validate_port(what: &'static str, port: u32) -> Result<u16> {
    match u16::try_from(port) {
        Ok(p) if p != 0 => Ok(p),
        _ => Err(Error::invalid(what, format!("{what} {port} is not between 1 and 65535"))),
    }
}

fn now_millis() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn curator_field_order_and_nulls() {
        let instance: ServiceInstance<Value> = ServiceInstance::builder("orders")
            .id("j1")
            .address("10.0.0.1")
            .port(8080)
            .registration_time_utc(5)
            .build()
            .unwrap();
        let json = String::from_utf8(instance.to_json().unwrap()).unwrap();
        assert_eq!(
            json,
            r#"{"name":"orders","id":"j1","address":"10.0.0.1","port":8080,"sslPort":null,"payload":null,"registrationTimeUTC":5,"serviceType":"DYNAMIC","uriSpec":null,"enabled":true}"#
        );
    }

    #[test]
    fn reads_what_curator_5_4_wrote_and_keeps_the_payload_untouched() {
        let curator = br#"{"name":"orders","id":"j1","address":"10.0.0.1","port":8080,"sslPort":null,"payload":{"@class":"java.util.LinkedHashMap","zone":"a"},"registrationTimeUTC":1795470088559,"serviceType":"DYNAMIC","uriSpec":null}"#;
        let got: ServiceInstance<Value> = ServiceInstance::from_json("/x", curator).unwrap();
        assert!(got.enabled, "absent enabled reads as true");
        assert_eq!(got.payload, Some(json!({"@class": "java.util.LinkedHashMap", "zone": "a"})));
        let again: Value = serde_json::from_slice(&got.to_json().unwrap()).unwrap();
        assert_eq!(again["payload"], json!({"@class": "java.util.LinkedHashMap", "zone": "a"}));
        let spring = json!({"@class": "org.springframework.cloud.zookeeper.discovery.ZookeeperInstance",
            "id": "app-1", "name": "app", "metadata": {"instance_status": "UP"}});
        let i = ServiceInstance::builder("app").id("1").payload(spring.clone()).build().unwrap();
        let back: ServiceInstance<Value> = ServiceInstance::from_json("/x", &i.to_json().unwrap()).unwrap();
        assert_eq!(back, i);
        assert!(matches!(ServiceInstance::<Value>::from_json("/x", b"not json"), Err(Error::CorruptData { .. })));
    }

    #[test]
    fn bad_input_is_typed() {
        for bad in ["", "a/b", "/", ".", "..", "a\nb"] {
            assert!(
                matches!(ServiceInstance::<Value>::builder(bad).build(), Err(Error::InvalidArgument { .. })),
                "{bad:?}"
            );
            assert!(matches!(
                ServiceInstance::<Value>::builder("s").id(bad).build(),
                Err(Error::InvalidArgument { .. })
            ));
        }
        for port in [0, 65536, u32::MAX] {
            assert!(matches!(
                ServiceInstance::<Value>::builder("s").port(port).build(),
                Err(Error::InvalidArgument { .. })
            ));
            assert!(matches!(
                ServiceInstance::<Value>::builder("s").ssl_port(port).build(),
                Err(Error::InvalidArgument { .. })
            ));
        }
        let keys: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let i = ServiceInstance::builder("s").payload(keys).build().unwrap();
        assert!(matches!(i.to_json(), Err(Error::InvalidArgument { .. })));
    }

    #[test]
    fn uri_specs() {
        let spec = UriSpec::parse("{scheme}://{address}:{port}/x/{[}id{]}");
        let json = serde_json::to_string(&spec).unwrap();
        assert!(json.starts_with(r#"{"parts":[{"value":"scheme","variable":true},{"value":"://","variable":false}"#));
        let i = ServiceInstance::<Value> {
            uri_spec: Some(spec),
            ..ServiceInstance::builder("s").id("i").address("h").port(80).build().unwrap()
        };
        assert_eq!(i.build_uri().as_deref(), Some("http://h:80/x/{id}"));
        assert_eq!(UriSpec::parse("a{b").parts, vec![UriSpecPart { value: "a{b".into(), variable: false }]);
    }
}
