//! [`ModelSerializer`]: how a model becomes a node's bytes and back; JSON by default.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Error, Result};

/// Turns a model into a node's data and back. [`JsonSerializer`] is the default; implement it
/// for another format (the path is given for error messages).
///
/// # Examples
/// ```
/// use zk_recipes::modeled::ModelSerializer;
/// use zk_recipes::Error;
///
/// /// A model that is a plain UTF-8 string.
/// struct Text;
///
/// impl ModelSerializer<String> for Text {
///     fn serialize(&self, _path: &str, value: &String) -> zk_recipes::Result<Vec<u8>> {
///         Ok(value.clone().into_bytes())
///     }
///     fn deserialize(&self, path: &str, bytes: &[u8]) -> zk_recipes::Result<String> {
///         String::from_utf8(bytes.to_vec()).map_err(|e| Error::corrupt_data(path, e.to_string()))
///     }
/// }
/// ```
pub trait ModelSerializer<T>: Send + Sync + 'static {
    /// The bytes of `value`, to be written at `path`.
    ///
    /// # Errors
    /// Whatever the format refuses (with [`Error::invalid_argument`]).
    fn serialize(&self, path: &str, value: &T) -> Result<Vec<u8>>;

    /// The model in the bytes read at `path`.
    ///
    /// # Errors
    /// Bytes that are not a model: [`Error::corrupt_data`] naming `path`.
    fn deserialize(&self, path: &str, bytes: &[u8]) -> Result<T>;
}

/// JSON through serde (`serde_json`): the default serializer of a
/// [`ModeledFramework`](super::ModeledFramework).
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonSerializer;

impl<T: Serialize + DeserializeOwned> ModelSerializer<T> for JsonSerializer {
    fn serialize(&self, path: &str, value: &T) -> Result<Vec<u8>> {
        serde_json::to_vec(value).map_err(|e| Error::invalid_argument("value", format!("{path}: {e}")))
    }

    fn deserialize(&self, path: &str, bytes: &[u8]) -> Result<T> {
        serde_json::from_slice(bytes).map_err(|e| Error::corrupt_data(path, format!("not the model's JSON: {e}")))
    }
}
