//! Users, authentication and permissions, as Redis 7.0's ACL (acl.c).
//!
//! Users live in [`Acl`]; a connection holds the [`UserCell`] it
//! authenticated as and a snapshot of its rules ([`ClientAuth`]). A change
//! to any user replaces that user's snapshot and bumps one epoch counter:
//! a connection compares the epoch (one relaxed load) before each command
//! and reloads its snapshot only after a change, so checking permissions
//! takes no lock and shares no written cache line between workers.

pub mod catalog;
pub mod log;
mod user;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

pub use catalog::Catalog;
pub use user::{has_spaces, merge_selector_args, Denied, RuleError, Selector, User, READ, WRITE};

/// One user by name. Connections keep the cell they authenticated as; ACL
/// SETUSER replaces its rules, DELUSER marks it deleted.
pub struct UserCell {
    pub name: Vec<u8>,
    rules: RwLock<Arc<User>>,
    deleted: AtomicBool,
}

impl UserCell {
    fn new(user: User) -> Arc<UserCell> {
        Arc::new(UserCell {
            name: user.name.clone(),
            rules: RwLock::new(Arc::new(user)),
            deleted: AtomicBool::new(false),
        })
    }

    pub fn rules(&self) -> Arc<User> {
        self.rules.read().clone()
    }
}

/// A connection's identity: who it is and whether it has authenticated.
pub struct ClientAuth {
    /// `None` for the server's own clients (the log replay), which ACLs do
    /// not apply to, as Redis's clients without a user.
    pub user: Option<Arc<UserCell>>,
    /// The rules of `user` as of `epoch`.
    pub rules: Option<Arc<User>>,
    pub epoch: u64,
    pub authenticated: bool,
}

impl ClientAuth {
    /// The server's own clients: no user, every permission.
    pub fn internal() -> ClientAuth {
        ClientAuth {
            user: None,
            rules: None,
            epoch: 0,
            authenticated: true,
        }
    }

    /// The user name CLIENT LIST shows and ACL LOG records.
    pub fn user_name(&self) -> &[u8] {
        self.user.as_ref().map_or(b"default", |u| &u.name)
    }
}

/// A user's rules before (if it existed) and after ACL SETUSER.
pub type Changed = (Option<Arc<User>>, Arc<User>);

pub struct Acl {
    users: RwLock<BTreeMap<Vec<u8>, Arc<UserCell>>>,
    default: Arc<UserCell>,
    /// Bumped by every change of any user's rules.
    epoch: AtomicU64,
    /// The default user is on and nopass: connections need no AUTH.
    default_open: AtomicBool,
    /// New selectors (and `reset`) start with every channel allowed
    /// (`acl-pubsub-default allchannels`).
    pub pubsub_all: AtomicBool,
    pub log: Mutex<log::AclLog>,
}

impl Acl {
    pub fn new(cat: &Catalog) -> Acl {
        let default = UserCell::new(User::default_user(cat, false));
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), default.clone());
        Acl {
            users: RwLock::new(users),
            default,
            epoch: AtomicU64::new(1),
            default_open: AtomicBool::new(true),
            pubsub_all: AtomicBool::new(false),
            log: Mutex::new(log::AclLog::default()),
        }
    }

    /// A new connection: the default user, authenticated when it needs no
    /// password (Redis's createClient).
    pub fn new_client(&self) -> ClientAuth {
        // The epoch before the rules: a change in between is seen as one
        // still to load, never the other way round.
        let epoch = self.epoch.load(Acquire);
        let rules = self.default.rules();
        ClientAuth {
            authenticated: rules.enabled && rules.nopass,
            user: Some(self.default.clone()),
            rules: Some(rules),
            epoch,
        }
    }

    /// RESET: back to the default user (Redis's clientSetDefaultAuth).
    pub fn reset_client(&self, auth: &mut ClientAuth) {
        if auth.user.is_some() {
            *auth = self.new_client();
        }
    }

    /// Reloads a connection's rules if any user changed since.
    #[inline]
    pub fn refresh(&self, auth: &mut ClientAuth) {
        let epoch = self.epoch.load(Acquire);
        if auth.epoch != epoch {
            self.reload(auth, epoch);
        }
    }

    #[cold]
    fn reload(&self, auth: &mut ClientAuth, epoch: u64) {
        if let Some(cell) = &auth.user {
            auth.rules = Some(cell.rules());
        }
        auth.epoch = epoch;
    }

    /// Whether a connection may run commands other than the `no_auth`
    /// ones (Redis's authRequired, negated).
    #[inline]
    pub fn authenticated(&self, auth: &ClientAuth) -> bool {
        auth.authenticated || self.default_open.load(Relaxed)
    }

    pub fn default_user(&self) -> Arc<User> {
        self.default.rules()
    }

    pub fn get(&self, name: &[u8]) -> Option<Arc<UserCell>> {
        self.users.read().get(name).cloned()
    }

    /// Every user, in name order.
    pub fn all(&self) -> Vec<Arc<UserCell>> {
        self.users.read().values().cloned().collect()
    }

    /// ACLCheckUserCredentials: the user exists, is on, and the password
    /// is one of its own.
    pub fn check_credentials(&self, name: &[u8], password: &[u8]) -> Option<Arc<UserCell>> {
        let cell = self.get(name)?;
        let rules = cell.rules();
        (rules.enabled && rules.password_ok(password)).then_some(cell)
    }

    /// Authenticates a connection as `cell`.
    pub fn login(&self, auth: &mut ClientAuth, cell: Arc<UserCell>) {
        auth.epoch = self.epoch.load(Acquire);
        auth.rules = Some(cell.rules());
        auth.user = Some(cell);
        auth.authenticated = true;
    }

    /// ACL SETUSER: applies `ops` to a copy of the user (a new one if it
    /// does not exist); all or nothing. On error: the rule and why.
    pub fn set_user(
        &self,
        cat: &Catalog,
        name: &[u8],
        ops: &[Vec<u8>],
    ) -> Result<Changed, (Vec<u8>, RuleError)> {
        let pubsub_all = self.pubsub_all.load(Relaxed);
        let mut users = self.users.write();
        let old = users.get(name).map(|c| c.rules());
        let mut user = match &old {
            Some(u) => (**u).clone(),
            None => User::new(cat, name, pubsub_all),
        };
        for op in ops {
            user.set_op(cat, op, pubsub_all)
                .map_err(|e| (op.clone(), e))?;
        }
        let user = Arc::new(user);
        match users.get(name) {
            Some(cell) => *cell.rules.write() = user.clone(),
            None => {
                users.insert(name.to_vec(), UserCell::new((*user).clone()));
            }
        }
        self.changed();
        Ok((old, user))
    }

    /// ACL DELUSER of users other than `default`: how many existed, and
    /// their cells (whose connections must close).
    pub fn delete_users(&self, names: &[&[u8]]) -> Vec<Arc<UserCell>> {
        let mut users = self.users.write();
        let gone: Vec<Arc<UserCell>> = names.iter().filter_map(|n| users.remove(*n)).collect();
        for cell in &gone {
            cell.deleted.store(true, Relaxed);
        }
        drop(users);
        self.changed();
        gone
    }

    /// Replaces every user (ACL LOAD, the users of the config at start).
    /// The default user keeps its cell, so its connections stay; the other
    /// old users are gone, and their connections must close, as Redis
    /// frees them with their clients.
    pub fn replace_all(&self, new: Vec<User>, cat: &Catalog) -> Vec<Arc<UserCell>> {
        let pubsub_all = self.pubsub_all.load(Relaxed);
        let mut users = self.users.write();
        let old = std::mem::take(&mut *users);
        let mut default = None;
        for u in new {
            if u.name == b"default" {
                default = Some(u);
            } else {
                users.insert(u.name.clone(), UserCell::new(u));
            }
        }
        *self.default.rules.write() =
            Arc::new(default.unwrap_or_else(|| User::default_user(cat, pubsub_all)));
        users.insert(b"default".to_vec(), self.default.clone());
        drop(users);
        self.changed();
        let gone: Vec<Arc<UserCell>> = old
            .into_values()
            .filter(|c| !Arc::ptr_eq(c, &self.default))
            .collect();
        for c in &gone {
            c.deleted.store(true, Relaxed);
        }
        gone
    }

    /// requirepass: the default user's only password, or nopass when
    /// empty (Redis's ACLUpdateDefaultUserPassword).
    pub fn set_requirepass(&self, cat: &Catalog, password: &[u8]) {
        let pubsub_all = self.pubsub_all.load(Relaxed);
        let mut user = (*self.default.rules()).clone();
        // These rules cannot fail.
        let _ = user.set_op(cat, b"resetpass", pubsub_all);
        if password.is_empty() {
            let _ = user.set_op(cat, b"nopass", pubsub_all);
        } else {
            let mut op = b">".to_vec();
            op.extend_from_slice(password);
            let _ = user.set_op(cat, &op, pubsub_all);
        }
        *self.default.rules.write() = Arc::new(user);
        self.changed();
    }

    fn changed(&self) {
        let d = self.default.rules();
        self.default_open.store(d.enabled && d.nopass, Relaxed);
        // Release: whoever sees the new epoch sees the new rules.
        self.epoch.fetch_add(1, Release);
    }

    /// Whether `cell` is still a user (connections of a deleted one are
    /// closing).
    pub fn is_deleted(cell: &UserCell) -> bool {
        cell.deleted.load(Relaxed)
    }
}

/// Builds users from `user <name> rules...` lines (the config's, an ACL
/// file's). Errors are Redis's texts, per line where `file` is given.
pub fn parse_users(
    cat: &Catalog,
    lines: &[(usize, Vec<Vec<u8>>)],
    pubsub_all: bool,
    file: Option<&str>,
) -> Result<Vec<User>, String> {
    let mut errors = String::new();
    let mut users: Vec<User> = Vec::new();
    let origin = |line: usize| match file {
        Some(f) => format!("{f}:{line}"),
        None => format!("line {line}"),
    };
    for (line, args) in lines {
        let (Some(name), Some(first)) = (args.get(1), args.first()) else {
            errors.push_str(&format!(
                "{} should start with user keyword followed by the username. ",
                origin(*line)
            ));
            continue;
        };
        if first.as_slice() != b"user" {
            errors.push_str(&format!(
                "{} should start with user keyword followed by the username. ",
                origin(*line)
            ));
            continue;
        }
        if has_spaces(name) {
            errors.push_str(&format!(
                "'{}: username '{}' contains invalid characters. ",
                origin(*line),
                String::from_utf8_lossy(name)
            ));
            continue;
        }
        if users.iter().any(|u| u.name == *name) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{}' found on line {}. ",
                String::from_utf8_lossy(name),
                line
            ));
            continue;
        }
        let mut u = User::new(cat, name, pubsub_all);
        if name.as_slice() == b"default" && file.is_none() {
            // The config's default user is the existing one, reset
            // (ACLLoadConfiguredUsers); an ACL file's is created afresh.
            let _ = u.set_op(cat, b"reset", pubsub_all);
        }
        let rest: Vec<&[u8]> = args[2..].iter().map(Vec::as_slice).collect();
        let ops = match merge_selector_args(&rest) {
            Ok(ops) => ops,
            Err(_) => {
                errors.push_str(&format!(
                    "{}: Unmatched parenthesis in selector definition.",
                    origin(*line)
                ));
                continue;
            }
        };
        for op in &ops {
            if let Err(e) = u.set_op(cat, op, pubsub_all) {
                errors.push_str(&format!("{}: {}. ", origin(*line), e.message()));
            }
        }
        users.push(u);
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        Err(errors)
    }
}

/// ACL SAVE's file: one `user <name> <rules>` line per user, in name
/// order.
pub fn file_text(acl: &Acl, cat: &Catalog) -> Vec<u8> {
    let mut out = Vec::new();
    for cell in acl.all() {
        out.extend_from_slice(b"user ");
        out.extend_from_slice(&cell.name);
        out.push(b' ');
        out.extend_from_slice(&cell.rules().describe(cat));
        out.push(b'\n');
    }
    out
}
