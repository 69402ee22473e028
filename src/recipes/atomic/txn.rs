//! The transaction of one write of an atomic value: what it carries, and which of its
//! operations a failure names.

use crate::framework::{CreateMode, WriteOp};

/// One write: the value's versioned `setData`, then, in this order, a `check` of the gate's
/// version (an optimistic write of a queueing value), the creation of the write's marker, the
/// deletion of our previous markers, the deletion of our queue node (a write in our turn), and
/// for each joining addition the creation of its marker and the deletion of its queue node.
pub(super) struct Txn<'a> {
    pub value_path: &'a str,
    pub new: &'a [u8],
    pub version: i32,
    pub gate: Option<(&'a str, i32)>,
    pub marker: &'a str,
    pub marker_data: &'a [u8],
    pub previous: &'a [String],
    pub release: Option<&'a str>,
    pub joiners: &'a [Joined],
}

/// A joining addition written by a [`Txn`]: its marker (a path) and the value before it, which
/// the marker holds, and its queue node (a path).
#[derive(Debug, Clone)]
pub(super) struct Joined {
    pub marker: String,
    pub before: Vec<u8>,
    pub node: String,
}

/// An operation of a [`Txn`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Value,
    Gate,
    Marker,
    /// The deletion of the k-th previous marker.
    Previous(usize),
    Release,
    /// The creation of the k-th joiner's marker.
    JoinerMarker(usize),
    /// The deletion of the k-th joiner's queue node.
    JoinerNode(usize),
}

impl Txn<'_> {
    /// The operations, in the order they are sent.
    pub(super) fn ops(&self) -> Vec<Op> {
        let mut ops = vec![Op::Value];
        ops.extend(self.gate.map(|_| Op::Gate));
        ops.push(Op::Marker);
        ops.extend((0..self.previous.len()).map(Op::Previous));
        ops.extend(self.release.map(|_| Op::Release));
        for k in 0..self.joiners.len() {
            ops.extend([Op::JoinerMarker(k), Op::JoinerNode(k)]);
        }
        ops
    }

    /// The operation a failure at `index` names.
    pub(super) fn op(&self, index: usize) -> Option<Op> {
        self.ops().get(index).copied()
    }

    /// The operations of the `multi`, in [`ops`](Self::ops)' order; markers are created
    /// persistent.
    pub(super) fn writes(&self) -> Vec<WriteOp<'_>> {
        let marker = |path, data| WriteOp::Create { path, data, mode: CreateMode::Persistent, ttl: None };
        let mut writes = vec![WriteOp::SetData { path: self.value_path, data: self.new, version: Some(self.version) }];
        writes.extend(self.gate.map(|(path, version)| WriteOp::Check { path, version }));
        writes.push(marker(self.marker, self.marker_data));
        writes.extend(self.previous.iter().map(|path| WriteOp::Delete { path, version: None }));
        writes.extend(self.release.map(|path| WriteOp::Delete { path, version: None }));
        for joined in self.joiners {
            writes.push(marker(&joined.marker, &joined.before));
            writes.push(WriteOp::Delete { path: &joined.node, version: None });
        }
        writes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failures_index_names_its_operation() {
        let joiners = vec![
            Joined { marker: "/v/_txn_a-1".into(), before: vec![], node: "/v/_lock_/x".into() },
            Joined { marker: "/v/_txn_b-1".into(), before: vec![], node: "/v/_lock_/y".into() },
        ];
        let previous = vec!["/v/_txn_c-1".to_string()];
        let mut txn = Txn {
            value_path: "/v",
            new: &[1],
            version: 3,
            gate: None,
            marker: "/v/_txn_c-2",
            marker_data: &[],
            previous: &previous,
            release: Some("/v/_lock_/z"),
            joiners: &joiners,
        };
        use Op::*;
        let expected =
            [Value, Marker, Previous(0), Release, JoinerMarker(0), JoinerNode(0), JoinerMarker(1), JoinerNode(1)];
        assert_eq!(txn.ops(), expected);
        assert_eq!(txn.writes().len(), expected.len());
        assert_eq!(txn.op(5), Some(JoinerNode(0)));
        assert_eq!(txn.op(8), None);
        txn.gate = Some(("/v/_gate_", 0));
        txn.previous = &[];
        txn.release = None;
        txn.joiners = &[];
        assert_eq!(txn.ops(), [Value, Gate, Marker]);
    }
}
