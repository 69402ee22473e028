//! [`Acl`], [`Permissions`] and [`AuthUser`]: ZooKeeper's access control, as this crate's own
//! types (the client library's are converted at the edge, so that its upgrades are not ours to
//! publish).

use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign};

/// What an [`Acl`] entry allows: a set of ZooKeeper's five permissions (`ZooDefs.Perms`).
///
/// Combine them with `|`; test with [`contains`](Self::contains).
///
/// # Examples
/// ```
/// use zk_recipes::Permissions;
///
/// let rw = Permissions::READ | Permissions::WRITE;
/// assert!(rw.contains(Permissions::READ));
/// assert!(!rw.contains(Permissions::ADMIN));
/// assert!(Permissions::ALL.contains(rw));
/// assert_eq!(rw.to_string(), "rw");
/// assert_eq!(Permissions::from_bits(3), Some(rw));
/// assert_eq!(Permissions::from_bits(64), None);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Permissions(u8);

impl Permissions {
    /// Read the node's data and list its children.
    pub const READ: Permissions = Permissions(1);
    /// Set the node's data.
    pub const WRITE: Permissions = Permissions(2);
    /// Create children.
    pub const CREATE: Permissions = Permissions(4);
    /// Delete children.
    pub const DELETE: Permissions = Permissions(8);
    /// Set the node's ACL.
    pub const ADMIN: Permissions = Permissions(16);
    /// All five.
    pub const ALL: Permissions = Permissions(31);
    /// None.
    pub const NONE: Permissions = Permissions(0);

    /// The permissions of ZooKeeper's bit mask (`ZooDefs.Perms`), or `None` for a mask with a
    /// bit no permission has.
    pub const fn from_bits(bits: i32) -> Option<Permissions> {
        if bits & !(Self::ALL.0 as i32) != 0 {
            None
        } else {
            Some(Permissions(bits as u8))
        }
    }

    /// ZooKeeper's bit mask of these permissions.
    pub const fn bits(self) -> i32 {
        self.0 as i32
    }

    /// Whether every permission of `other` is in `self`.
    pub const fn contains(self, other: Permissions) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether there is no permission at all.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn to_client(self) -> zookeeper_client::Permission {
        use zookeeper_client::Permission as P;
        [(Self::READ, P::READ), (Self::WRITE, P::WRITE), (Self::CREATE, P::CREATE), (Self::DELETE, P::DELETE)]
            .into_iter()
            .chain([(Self::ADMIN, P::ADMIN)])
            .filter(|(ours, _)| self.contains(*ours))
            .fold(P::NONE, |acc, (_, theirs)| acc | theirs)
    }

    fn from_client(p: zookeeper_client::Permission) -> Permissions {
        use zookeeper_client::Permission as P;
        [(Self::READ, P::READ), (Self::WRITE, P::WRITE), (Self::CREATE, P::CREATE), (Self::DELETE, P::DELETE)]
            .into_iter()
            .chain([(Self::ADMIN, P::ADMIN)])
            .filter(|(_, theirs)| p.has(*theirs))
            .fold(Permissions::NONE, |acc, (ours, _)| acc | ours)
    }
}

impl BitOr for Permissions {
    type Output = Permissions;
    fn bitor(self, rhs: Permissions) -> Permissions {
        Permissions(self.0 | rhs.0)
    }
}

impl BitOrAssign for Permissions {
    fn bitor_assign(&mut self, rhs: Permissions) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for Permissions {
    type Output = Permissions;
    fn bitand(self, rhs: Permissions) -> Permissions {
        Permissions(self.0 & rhs.0)
    }
}

/// `rwcda` letters, as ZooKeeper's shell prints them (`""` for none).
impl fmt::Display for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letters =
            [(Self::READ, 'r'), (Self::WRITE, 'w'), (Self::CREATE, 'c'), (Self::DELETE, 'd'), (Self::ADMIN, 'a')];
        letters.iter().filter(|(p, _)| self.contains(*p)).try_for_each(|(_, c)| write!(f, "{c}"))
    }
}

impl fmt::Debug for Permissions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Permissions({self})")
    }
}

/// One entry of a node's access control list: who (`scheme` and `id`) may do what
/// ([`Permissions`]). Curator's and ZooKeeper's `ACL`.
///
/// The usual lists are ready-made, as in ZooKeeper's `ZooDefs.Ids`:
/// [`anyone_all`](Self::anyone_all) (`OPEN_ACL_UNSAFE`, the default),
/// [`anyone_read`](Self::anyone_read) (`READ_ACL_UNSAFE`) and
/// [`creator_all`](Self::creator_all) (`CREATOR_ALL_ACL`: everything for the identities the
/// creating session authenticated as; the session needs an
/// [`auth`](crate::FrameworkBuilder::auth) entry).
///
/// # Examples
/// ```no_run
/// # async fn demo() -> zk_recipes::Result<()> {
/// use zk_recipes::{Acl, Framework, Permissions};
///
/// let fw = Framework::builder()
///     .connect_string("zk1:2181")
///     .auth("digest", "svc:s3cret")
///     .default_acl(Acl::creator_all())
///     .connect()
///     .await?;
/// let (acl, stat) = fw.get_acl("/jobs").await?;
/// let mut opened = acl.clone();
/// opened.push(Acl::new(Permissions::READ, "world", "anyone"));
/// fw.set_acl("/jobs", &opened, Some(stat.aversion)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Acl {
    permissions: Permissions,
    scheme: String,
    id: String,
}

impl Acl {
    /// An entry giving `permissions` to the identity `id` of `scheme` (`world`/`anyone`,
    /// `auth`/`""`, `digest`/`user:base64(sha1(user:password))`, `ip`/`10.0.0.0/8`, ...).
    pub fn new(permissions: Permissions, scheme: impl Into<String>, id: impl Into<String>) -> Acl {
        Acl { permissions, scheme: scheme.into(), id: id.into() }
    }

    /// `permissions` for anyone (`world:anyone`).
    pub fn anyone(permissions: Permissions) -> Acl {
        Acl::new(permissions, "world", "anyone")
    }

    /// Every permission for anyone: ZooKeeper's `OPEN_ACL_UNSAFE`, the framework's default.
    pub fn anyone_all() -> Vec<Acl> {
        vec![Acl::anyone(Permissions::ALL)]
    }

    /// Read for anyone: ZooKeeper's `READ_ACL_UNSAFE`.
    pub fn anyone_read() -> Vec<Acl> {
        vec![Acl::anyone(Permissions::READ)]
    }

    /// Every permission for the creating session's identities (`auth:`): ZooKeeper's
    /// `CREATOR_ALL_ACL`.
    pub fn creator_all() -> Vec<Acl> {
        vec![Acl::new(Permissions::ALL, "auth", "")]
    }

    /// What the entry allows.
    pub fn permissions(&self) -> Permissions {
        self.permissions
    }

    /// The identity's scheme (`world`, `auth`, `digest`, `ip`, `x509`, `sasl`, ...).
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// The identity within its scheme.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The client library's entry.
    pub(crate) fn to_client(&self) -> zookeeper_client::Acl {
        zookeeper_client::Acl::new(self.permissions.to_client(), zookeeper_client::AuthId::new(&self.scheme, &self.id))
    }

    /// The client library's entry as ours.
    pub(crate) fn from_client(acl: &zookeeper_client::Acl) -> Acl {
        Acl::new(Permissions::from_client(acl.permission()), acl.scheme(), acl.id())
    }

    /// A list of ours as the client library's.
    pub(crate) fn to_client_list(acl: &[Acl]) -> Vec<zookeeper_client::Acl> {
        acl.iter().map(Acl::to_client).collect()
    }
}

/// `scheme:id:perms`, as ZooKeeper's shell prints an entry.
impl fmt::Display for Acl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.scheme, self.id, self.permissions)
    }
}

/// An identity a session is authenticated as, as [`Framework::whoami`](crate::Framework::whoami)
/// reports it (ZooKeeper's `ClientInfo`).
///
/// # Examples
/// ```no_run
/// # async fn demo(fw: zk_recipes::Framework) -> zk_recipes::Result<()> {
/// for me in fw.whoami().await? {
///     println!("{}: {}", me.scheme(), me.user());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AuthUser {
    scheme: String,
    user: String,
}

impl AuthUser {
    /// The scheme (`ip`, `digest`, `x509`, `sasl`, ...).
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// The user within the scheme (for `ip`, the address).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The client library's user as ours.
    pub(crate) fn from_client(user: &zookeeper_client::AuthUser) -> AuthUser {
        AuthUser { scheme: user.scheme().to_string(), user: user.user().to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_round_trip_through_the_client_library() {
        for bits in 0..32 {
            let ours = Permissions::from_bits(bits).unwrap();
            let theirs = ours.to_client();
            assert_eq!(Permissions::from_client(theirs), ours, "bits {bits}");
        }
        assert_eq!(Permissions::ALL.to_client(), zookeeper_client::Permission::ALL);
        assert_eq!(Permissions::from_bits(-1), None);
        assert_eq!(Permissions::ALL.to_string(), "rwcda");
    }

    #[test]
    fn acl_round_trips_and_the_ready_made_lists_match_zookeeper() {
        let acl = Acl::new(Permissions::READ | Permissions::ADMIN, "digest", "u:h");
        assert_eq!(Acl::from_client(&acl.to_client()), acl);
        assert_eq!(acl.to_string(), "digest:u:h:ra");
        let ids = |v: Vec<Acl>| Acl::to_client_list(&v);
        assert_eq!(ids(Acl::anyone_all()), zookeeper_client::Acls::anyone_all().to_vec());
        assert_eq!(ids(Acl::anyone_read()), zookeeper_client::Acls::anyone_read().to_vec());
        assert_eq!(ids(Acl::creator_all()), zookeeper_client::Acls::creator_all().to_vec());
    }
}
