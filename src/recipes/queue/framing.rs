//! The bytes of a `DistributedQueue` node, as Curator's `ItemSerializer` writes them: a 4-byte
//! big-endian version (`0x00010001`), then per item an `ITEM` opcode (`0x01`), a 4-byte
//! big-endian length and the item's bytes, and an `EOF` opcode (`0x02`) at the end. One node
//! can carry several items (`put_multi`).

use crate::error::{Error, Result};

/// The framing's version word.
const VERSION: u32 = 0x0001_0001;
/// Opens one item.
const ITEM_OPCODE: u8 = 0x01;
/// Ends the node.
const EOF_OPCODE: u8 = 0x02;

/// The largest node data a queue writes: ZooKeeper refuses requests larger than its
/// `jute.maxbuffer` (1 MiB less one byte by default), and the request carries the path and the
/// ACL besides the data, so the guard keeps 24 KiB below the limit.
pub const MAX_ITEM_BYTES: usize = 1024 * 1000;

/// Turns a queue's items into bytes and back (Curator's `QueueSerializer`).
///
/// The bytes of each item are framed by the queue (see [`Queue`](crate::Queue)); a serializer
/// only sees one item's bytes. [`BytesSerializer`] passes bytes through and is what
/// a Curator producer using a byte-array serializer needs.
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// use zk_recipes::queue::{DistributedQueue, QueueBuilder, QueueSerializer};
/// use zk_recipes::{Error, Result};
///
/// /// Items as UTF-8 text.
/// struct Text;
///
/// impl QueueSerializer<String> for Text {
///     fn serialize(&self, item: &String) -> Result<Vec<u8>> {
///         Ok(item.as_bytes().to_vec())
///     }
///     fn deserialize(&self, bytes: &[u8]) -> Result<String> {
///         String::from_utf8(bytes.to_vec()).map_err(|e| Error::corrupt_data("", e.to_string()))
///     }
/// }
/// let queue: DistributedQueue<String> = QueueBuilder::new(&fw, "/queues/text").serializer(Text).build()?;
/// queue.put(&"hello".to_string()).await?;
/// # Ok(()) }
/// ```
pub trait QueueSerializer<T>: Send + Sync + 'static {
    /// The bytes of `item`.
    ///
    /// # Errors
    /// Whatever the serializer finds wrong with the item (as [`Error::InvalidArgument`]).
    fn serialize(&self, item: &T) -> Result<Vec<u8>>;

    /// The item that `bytes` encode.
    ///
    /// # Errors
    /// [`Error::CorruptData`] (or another error) when the bytes are not an item.
    fn deserialize(&self, bytes: &[u8]) -> Result<T>;
}

/// The identity serializer: an item is its bytes.
///
/// # Examples
/// ```
/// use zk_recipes::queue::{BytesSerializer, QueueSerializer};
///
/// let bytes = BytesSerializer.serialize(&b"raw".to_vec())?;
/// assert_eq!(BytesSerializer.deserialize(&bytes)?, b"raw".to_vec());
/// # Ok::<(), zk_recipes::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct BytesSerializer;

impl QueueSerializer<Vec<u8>> for BytesSerializer {
    fn serialize(&self, item: &Vec<u8>) -> Result<Vec<u8>> {
        Ok(item.clone())
    }

    fn deserialize(&self, bytes: &[u8]) -> Result<Vec<u8>> {
        Ok(bytes.to_vec())
    }
}

/// Checks the size of a node's data for the queue at `queue` against [`MAX_ITEM_BYTES`].
pub(crate) fn check_size(queue: &str, size: usize) -> Result<()> {
    if size > MAX_ITEM_BYTES {
        return Err(Error::TooLarge { path: queue.to_string(), size, limit: MAX_ITEM_BYTES });
    }
    Ok(())
}

/// Frames `items` (already serialized) into one node's data.
///
/// # Errors
/// [`Error::InvalidArgument`] for no items or an empty item (the node's size is checked where
/// it is put: [`check_size`]).
pub(crate) fn encode(items: &[Vec<u8>]) -> Result<Vec<u8>> {
    if items.is_empty() {
        return Err(Error::invalid("items", "a put needs at least one item"));
    }
    if items.iter().any(Vec::is_empty) {
        return Err(Error::invalid("item", "an empty queue item"));
    }
    let size = 4 + items.iter().map(|i| 5 + i.len()).sum::<usize>() + 1;
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&VERSION.to_be_bytes());
    for item in items {
        out.push(ITEM_OPCODE);
        out.extend_from_slice(&(item.len() as u32).to_be_bytes());
        out.extend_from_slice(item);
    }
    out.push(EOF_OPCODE);
    Ok(out)
}

/// The items framed in a node's data (at `path`, for the error).
///
/// # Errors
/// [`Error::CorruptData`] when the data is not Curator's framing.
pub(crate) fn decode(path: &str, data: &[u8]) -> Result<Vec<Vec<u8>>> {
    let corrupt = |reason: String| Error::CorruptData { path: path.to_string(), reason };
    let mut rest = data;
    let mut take = |n: usize| -> Result<&[u8]> {
        if rest.len() < n {
            return Err(corrupt(format!("truncated queue item ({} bytes)", data.len())));
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Ok(head)
    };
    let version = u32::from_be_bytes(take(4)?.try_into().unwrap_or_default());
    if version != VERSION {
        return Err(corrupt(format!("queue item version 0x{version:08x}, expected 0x{VERSION:08x}")));
    }
    let mut items = Vec::new();
    loop {
        match take(1)?[0] {
            EOF_OPCODE => break,
            ITEM_OPCODE => {
                let size = u32::from_be_bytes(take(4)?.try_into().unwrap_or_default());
                let size = usize::try_from(size).ok().filter(|s| *s <= i32::MAX as usize);
                let size = size.ok_or_else(|| corrupt("negative queue item size".into()))?;
                items.push(take(size)?.to_vec());
            }
            other => return Err(corrupt(format!("queue item opcode {other}, expected {ITEM_OPCODE}"))),
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use assert_matches::assert_matches;

    #[test]
    fn one_item_is_framed_as_curator_does() {
        let bytes = encode(&[b"ab".to_vec()]).unwrap();
        assert_eq!(bytes, [0, 1, 0, 1, 1, 0, 0, 0, 2, b'a', b'b', 2]);
        assert_eq!(decode("/q/queue-1", &bytes).unwrap(), vec![b"ab".to_vec()]);
    }

    #[test]
    fn several_items_round_trip() {
        let items = vec![b"x".to_vec(), vec![0; 300], b"last".to_vec()];
        assert_eq!(decode("/q", &encode(&items).unwrap()).unwrap(), items);
    }

    #[test]
    fn bad_input_is_refused_with_typed_errors() {
        assert!(matches!(encode(&[]), Err(Error::InvalidArgument { .. })));
        assert!(matches!(encode(&[Vec::new()]), Err(Error::InvalidArgument { .. })));
        let big = vec![7u8; MAX_ITEM_BYTES];
        let framed = encode(&[big]).unwrap();
        assert_matches!(check_size("/q", framed.len()), Err(Error::TooLarge { size, limit: MAX_ITEM_BYTES, .. }) if size == MAX_ITEM_BYTES + 10);
        assert!(check_size("/q", encode(&[vec![7u8; MAX_ITEM_BYTES - 10]]).unwrap().len()).is_ok());
    }

    #[test]
    fn corrupt_data_is_told() {
        for data in [&b""[..], &[0, 1, 0, 2, 2], &[0, 1, 0, 1, 1, 0, 0, 0, 9, 1], &[0, 1, 0, 1, 5], &[0, 1, 0, 1]] {
            assert!(matches!(decode("/q/x", data), Err(Error::CorruptData { .. })), "{data:?}");
        }
    }
}
