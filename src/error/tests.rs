//! The classification and the source chains of [`Error`].

use std::collections::HashSet;
use std::time::Duration;

use crate::ZooKeeperError as Zk;

use super::*;

fn retries(last: Zk) -> Error {
    Error::RetriesExhausted { attempts: 3, elapsed: Duration::from_secs(1), last }
}

fn lock_lost() -> Error {
    Error::LockLost { path: "/l/x".into(), reason: crate::LossReason::NodeDeleted }
}

fn connect_timeout() -> Error {
    Error::ConnectTimeout { connect_string: "h:1".into(), timeout: Duration::from_secs(1) }
}

/// Every message of `e`'s chain (itself, then each `source()`), in order.
fn chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    std::iter::successors(Some(e), |e| e.source()).map(|e| e.to_string()).collect()
}

/// Errors of every variant that wraps or describes another error.
fn samples() -> Vec<Error> {
    vec![
        Error::ZooKeeper(Zk::NoNode),
        Error::ZooKeeper(Zk::Other("odd reply".into())),
        retries(Zk::ConnectionLoss),
        retries(Zk::Other("odd reply".into())),
        Error::Transaction { index: 2, path: "/a".into(), source: Zk::BadVersion },
        Error::Tls { server: "h:1".into(), failure: TlsFailure::UnknownCa },
        Error::Tls { server: "h:1".into(), failure: TlsFailure::Other("handshake eof".into()) },
        lock_lost(),
        Error::invalid("max_leases", "must be at least 1"),
        Error::Unsupported("upgrade"),
        Error::InvalidState("already started"),
        Error::ServerUnsupported(ServerFeature::TtlNodes),
        connect_timeout(),
    ]
}

#[test]
fn each_message_of_a_chain_is_printed_once() {
    for e in samples() {
        let messages = chain(&e);
        for (i, m) in messages.iter().enumerate() {
            for later in &messages[i + 1..] {
                assert!(!m.contains(later.as_str()), "{e:?}: {m:?} repeats its source {later:?}");
            }
        }
        assert_eq!(messages.iter().collect::<HashSet<_>>().len(), messages.len(), "{messages:?}");
    }
}

#[test]
fn wrapped_client_errors_are_sources() {
    use std::error::Error as _;
    assert_eq!(retries(Zk::ConnectionLoss).source().map(|s| s.to_string()), Some(Zk::ConnectionLoss.to_string()));
    let refused = Error::Transaction { index: 0, path: "/a".into(), source: Zk::NodeExists };
    assert_eq!(refused.source().map(|s| s.to_string()), Some(Zk::NodeExists.to_string()));
    // the server's error itself: shown as the server's error, once
    let e = Error::ZooKeeper(Zk::NoNode);
    assert_eq!(e.to_string(), Zk::NoNode.to_string());
    assert_eq!(chain(&e).len(), 1);
}

#[test]
fn retryable() {
    for e in [
        retries(Zk::SessionExpired),
        connect_timeout(),
        Error::timeout(Duration::from_secs(1), TimeoutStep::Waiting),
        Error::Suspended,
        Error::Contended { path: "/c".into(), attempts: 3 },
        Error::ZooKeeper(Zk::ConnectionLoss),
        Error::ZooKeeper(Zk::Timeout),
        Error::ZooKeeper(Zk::SessionMoved),
        Error::ZooKeeper(Zk::SessionExpired),
    ] {
        assert!(e.is_retryable(), "{e:?}");
    }
    for e in [
        Error::ZooKeeper(Zk::NoNode),
        Error::ZooKeeper(Zk::NoAuth),
        Error::ZooKeeper(Zk::BadVersion),
        Error::Closed,
        Error::SessionLost,
        lock_lost(),
        Error::OutcomeUnknown { path: "/a".into() },
        Error::AuthFailed { connect_string: "h:1".into() },
        Error::invalid("x", "y"),
        Error::ServerUnsupported(ServerFeature::MultiRead),
        Error::InvalidState("not started"),
        Error::Transaction { index: 0, path: "/a".into(), source: Zk::ConnectionLoss },
    ] {
        assert!(!e.is_retryable(), "{e:?}");
    }
}

#[test]
fn timeout() {
    assert!(Error::timeout(Duration::from_secs(1), TimeoutStep::Waiting).is_timeout());
    assert!(connect_timeout().is_timeout());
    assert!(!Error::ZooKeeper(Zk::ConnectionLoss).is_timeout());
    assert!(!retries(Zk::Timeout).is_timeout());
    assert!(!Error::Closed.is_timeout());
}

#[test]
fn lost() {
    assert!(lock_lost().is_lost());
    assert!(Error::SessionLost.is_lost());
    assert!(!Error::Suspended.is_lost());
    assert!(!Error::ZooKeeper(Zk::SessionExpired).is_lost());
    assert!(!Error::AlreadyReleased.is_lost());
}

#[test]
fn connection() {
    for e in [
        Error::Suspended,
        connect_timeout(),
        Error::ZooKeeper(Zk::ConnectionLoss),
        retries(Zk::ConnectionLoss),
        retries(Zk::Timeout),
    ] {
        assert!(e.is_connection(), "{e:?}");
    }
    for e in [
        retries(Zk::SessionExpired),
        Error::ZooKeeper(Zk::SessionExpired),
        Error::ZooKeeper(Zk::NoNode),
        Error::SessionLost,
        Error::timeout(Duration::from_secs(1), TimeoutStep::Waiting),
        Error::Closed,
    ] {
        assert!(!e.is_connection(), "{e:?}");
    }
}

#[test]
fn closed() {
    assert!(Error::Closed.is_closed());
    assert!(!Error::AlreadyReleased.is_closed());
    assert!(!Error::ZooKeeper(Zk::ClientClosed).is_closed());
}

#[test]
fn not_found_and_conflict() {
    let txn = |source| Error::Transaction { index: 1, path: "/a".into(), source };
    for e in [
        Error::ZooKeeper(Zk::NoNode),
        txn(Zk::NoNode),
        Error::NoSuchItem { path: "/q".into() },
        Error::UnknownPermit { semaphore: "/s".into(), permit_id: "p".into() },
    ] {
        assert!(e.is_not_found() && !e.is_conflict(), "{e:?}");
    }
    for e in [
        Error::ZooKeeper(Zk::NodeExists),
        Error::ZooKeeper(Zk::BadVersion),
        Error::ZooKeeper(Zk::NotEmpty),
        txn(Zk::BadVersion),
        txn(Zk::NodeExists),
        Error::NodeHeldByOther { path: "/m".into(), owner: 7 },
    ] {
        assert!(e.is_conflict() && !e.is_not_found(), "{e:?}");
    }
    for e in [Error::ZooKeeper(Zk::NoAuth), Error::Closed, Error::OutcomeUnknown { path: "/a".into() }] {
        assert!(!e.is_conflict() && !e.is_not_found(), "{e:?}");
    }
}

#[test]
fn invalid_input() {
    let e = Error::invalid("max_leases", "must be at least 1");
    assert!(e.is_invalid_input() && !e.is_unsupported());
    assert!(matches!(e, Error::InvalidArgument { argument: "max_leases", .. }));
    assert_eq!(e.to_string(), "invalid argument `max_leases`: must be at least 1");
    assert!(Error::InvalidPath { path: "a".into(), reason: "relative" }.is_invalid_input());
    assert!(!Error::Unsupported("x").is_invalid_input());
    assert!(!Error::ZooKeeper(Zk::BadArguments("bad".into())).is_invalid_input());
}

#[test]
fn invalid_arguments_name_the_parameter() {
    let builder = || crate::Framework::builder().connect_string("127.0.0.1:1");
    let argument = |b: crate::FrameworkBuilder| match b.validate() {
        Err(Error::InvalidArgument { argument, reason }) => {
            assert!(!reason.is_empty());
            argument
        }
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("accepted"),
    };
    assert_eq!(argument(crate::Framework::builder().connect_string(" ")), "connect_string");
    assert_eq!(argument(builder().session_timeout(Duration::ZERO)), "session_timeout");
    assert_eq!(argument(builder().connection_timeout(Duration::ZERO)), "connection_timeout");
    assert_eq!(argument(builder().default_acl(Vec::new())), "default_acl");
    assert!(builder().validate().is_ok());
}

#[test]
fn unsupported() {
    for e in [
        Error::ServerUnsupported(ServerFeature::WhoAmI),
        Error::ServerUnsupported(ServerFeature::PersistentWatches),
        Error::Unsupported("re-entering a lease"),
        Error::ZooKeeper(Zk::Unimplemented),
        Error::ZooKeeper(Zk::ReconfigDisabled),
    ] {
        assert!(e.is_unsupported() && !e.is_invalid_input() && !e.is_retryable(), "{e:?}");
    }
    assert!(!Error::invalid("ttl", "zero").is_unsupported());
    // a call that does not fit the state now is not "unsupported": it may work later
    assert!(!Error::InvalidState("already started").is_unsupported());
    assert!(!Error::AlreadyReleased.is_unsupported());
    let ttl = Error::ServerUnsupported(ServerFeature::TtlNodes).to_string();
    assert!(ttl.contains("extendedTypesEnabled=true"), "{ttl}");
    assert!(Error::ServerUnsupported(ServerFeature::WhoAmI).to_string().contains("3.7"));
}

/// One error of every variant (and of the client's errors that classify differently).
fn every_variant() -> Vec<Error> {
    let mut all = samples();
    all.extend([
        Error::invalid_argument("x", "y"),
        Error::InvalidPath { path: "a".into(), reason: "relative" },
        Error::AuthFailed { connect_string: "h:1".into() },
        Error::Closed,
        Error::timeout(Duration::from_secs(1), TimeoutStep::Reply),
        Error::SessionLost,
        Error::Suspended,
        Error::AlreadyReleased,
        Error::corrupt_data("/c", "odd"),
        Error::OutcomeUnknown { path: "/o".into() },
        Error::NodeHeldByOther { path: "/m".into(), owner: 7 },
        Error::UnknownPermit { semaphore: "/s".into(), permit_id: "p".into() },
        Error::TooLarge { path: "/q".into(), size: 2, limit: 1 },
        Error::NoSuchItem { path: "/q".into() },
        Error::Contended { path: "/c".into(), attempts: 3 },
        Error::ZooKeeper(Zk::SessionExpired),
        Error::ZooKeeper(Zk::NoAuth),
        Error::ZooKeeper(Zk::QuotaExceeded),
        Error::ZooKeeper(Zk::ClientClosed),
        retries(Zk::SessionMoved),
    ]);
    all
}

#[test]
fn each_is_method_is_its_kind() {
    for e in every_variant() {
        let kind = e.kind();
        assert_eq!(e.is_lost(), kind == ErrorKind::Lost, "{e:?}");
        assert_eq!(e.is_connection(), kind == ErrorKind::Connection, "{e:?}");
        assert_eq!(e.is_closed(), kind == ErrorKind::Closed, "{e:?}");
        assert_eq!(e.is_not_found(), kind == ErrorKind::NotFound, "{e:?}");
        assert_eq!(e.is_conflict(), kind == ErrorKind::Conflict, "{e:?}");
        assert_eq!(e.is_invalid_input(), kind == ErrorKind::InvalidInput, "{e:?}");
        assert_eq!(e.is_unsupported(), kind == ErrorKind::Unsupported, "{e:?}");
        let connect_timeout = matches!(e, Error::ConnectTimeout { .. });
        assert_eq!(e.is_timeout(), kind == ErrorKind::Timeout || connect_timeout, "{e:?}");
    }
}

#[test]
fn kinds() {
    let kind = |e: Error| e.kind();
    assert_eq!(kind(Error::ZooKeeper(Zk::SessionExpired)), ErrorKind::Session);
    assert_eq!(kind(retries(Zk::SessionMoved)), ErrorKind::Session);
    assert_eq!(kind(retries(Zk::ConnectionLoss)), ErrorKind::Connection);
    assert_eq!(kind(Error::ZooKeeper(Zk::NoAuth)), ErrorKind::Auth);
    assert_eq!(kind(Error::AuthFailed { connect_string: "h:1".into() }), ErrorKind::Auth);
    assert_eq!(kind(Error::Tls { server: "h:1".into(), failure: TlsFailure::NotTls }), ErrorKind::Tls);
    assert_eq!(kind(Error::AlreadyReleased), ErrorKind::InvalidState);
    assert_eq!(kind(Error::corrupt_data("/c", "odd")), ErrorKind::CorruptData);
    assert_eq!(kind(Error::OutcomeUnknown { path: "/o".into() }), ErrorKind::OutcomeUnknown);
    assert_eq!(kind(Error::Contended { path: "/c".into(), attempts: 1 }), ErrorKind::Contended);
    assert_eq!(kind(Error::TooLarge { path: "/q".into(), size: 2, limit: 1 }), ErrorKind::TooLarge);
    assert_eq!(kind(Error::ZooKeeper(Zk::QuotaExceeded)), ErrorKind::Other);
    assert_eq!(kind(connect_timeout()), ErrorKind::Connection);
}

#[test]
fn a_duplicate_is_the_same_failure() {
    for e in every_variant() {
        let copy = e.duplicate();
        assert!(copy.same(&e), "{e:?}");
        assert_eq!(format!("{copy:?}"), format!("{e:?}"));
    }
    assert!(!Error::Closed.same(&Error::SessionLost));
}
