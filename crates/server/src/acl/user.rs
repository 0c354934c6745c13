//! An ACL user and its selectors, as Redis 7.0's `user` and `aclSelector`:
//! the rules ACL SETUSER applies (`set_op`), the description ACL LIST,
//! GETUSER and SAVE print (`describe`), and the permission check every
//! command passes (`check`).

use sha2::{Digest, Sha256};

use super::catalog::{category, Catalog};
use crate::command::table::{flag, Command};
use crate::glob;

/// What a key pattern lets a command do to matching keys.
pub const READ: u8 = 1;
pub const WRITE: u8 = 2;
const READ_WRITE: u8 = READ | WRITE;

/// Why ACL SETUSER refused a rule (Redis's errno values in ACLSetUser),
/// with Redis's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    /// ENOENT
    UnknownCommand,
    /// EINVAL
    Syntax,
    /// EEXIST
    KeyAfterAll,
    /// EISDIR
    ChannelAfterAll,
    /// ENODEV
    NoSuchPassword,
    /// EBADMSG
    BadHash,
    /// ECHILD
    SubcommandFirstArg,
}

impl RuleError {
    pub fn message(self) -> &'static str {
        match self {
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::Syntax => "Syntax error",
            RuleError::KeyAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// Why a command was refused, in Redis's order of relevance
/// (ACL_DENIED_CMD < ACL_DENIED_KEY < ACL_DENIED_CHANNEL), with the
/// argument position of the key or channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    pub perm: u8,
}

impl KeyPattern {
    fn describe(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(match self.perm {
            READ => b"%R~",
            WRITE => b"%W~",
            _ => b"~",
        });
        out.extend_from_slice(&self.pattern);
    }
}

/// A set of permissions: commands, key patterns, channel patterns. A
/// command is allowed when any of a user's selectors allows all of it.
#[derive(Debug, Clone)]
pub struct Selector {
    pub allkeys: bool,
    pub allchannels: bool,
    /// Every command, without looking at the bits.
    pub allcommands: bool,
    /// Set by `+@all` and kept until `-@all`: commands added later are
    /// allowed too (Redis's reserved bit), and the description starts
    /// from `+@all`.
    future: bool,
    /// One bit per catalog id.
    allowed: Vec<u64>,
    /// Allowed first arguments of otherwise denied commands
    /// (`+select|0`), by catalog id, in the order added.
    firstargs: Vec<(usize, Vec<Vec<u8>>)>,
    /// The command and category rules since the last `+@all`/`-@all`, in
    /// order, lower case, a later rule for the same name replacing the
    /// earlier one (Redis 7.2's `command_rules`, which ACL LIST shows
    /// under `redis-version 7.4.1`).
    rules: Vec<Vec<u8>>,
    pub keys: Vec<KeyPattern>,
    pub channels: Vec<Vec<u8>>,
}

impl Selector {
    /// An empty selector; `allchannels` from `acl-pubsub-default`.
    pub fn new(cat: &Catalog, allchannels: bool) -> Selector {
        Selector {
            allkeys: false,
            allchannels,
            allcommands: false,
            future: false,
            allowed: vec![0; cat.len().div_ceil(64)],
            firstargs: Vec::new(),
            rules: Vec::new(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    fn bit(&self, id: usize) -> bool {
        self.allowed
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if let Some(w) = self.allowed.get_mut(id / 64) {
            if on {
                *w |= 1 << (id % 64);
            } else {
                *w &= !(1 << (id % 64));
                self.allcommands = false;
            }
        }
    }

    /// ACLChangeSelectorPerm: a command and all its subcommands.
    fn change_perm(&mut self, cat: &Catalog, id: usize, on: bool) {
        self.set_bit(id, on);
        self.firstargs.retain(|(i, _)| *i != id);
        for &sub in &cat.entry(id).subs {
            self.set_bit(sub, on);
        }
    }

    fn set_category(&mut self, cat: &Catalog, bit: u32, on: bool) {
        for id in 0..cat.len() {
            if cat.entry(id).categories & bit != 0 {
                self.change_perm(cat, id, on);
            }
        }
    }

    fn set_all(&mut self, on: bool) {
        self.allowed
            .iter_mut()
            .for_each(|w| *w = if on { !0 } else { 0 });
        self.allcommands = on;
        self.future = on;
        self.firstargs.clear();
        self.rules.clear();
    }

    /// Redis 7.2's ACLUpdateCommandRules: `name` (a command, `cmd|sub`,
    /// or `@category`) allowed or denied, replacing earlier rules for it
    /// (and for its subcommands).
    fn record_rule(&mut self, name: &[u8], allow: bool) {
        let name = name.to_ascii_lowercase();
        self.rules.retain(|r| {
            let old = &r[1..];
            !(old == name.as_slice()
                || (old.len() > name.len() && old.starts_with(&name) && old[name.len()] == b'|'))
        });
        let mut rule = vec![if allow { b'+' } else { b'-' }];
        rule.extend_from_slice(&name);
        self.rules.push(rule);
    }

    /// ACLSetSelector: one rule that changes a selector.
    pub fn set_op(&mut self, cat: &Catalog, op: &[u8]) -> Result<(), RuleError> {
        let is = |s: &str| op.eq_ignore_ascii_case(s.as_bytes());
        if op.is_empty() {
            return Err(RuleError::Syntax);
        }
        if is("allkeys") || is("~*") {
            self.allkeys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.allkeys = false;
            self.keys.clear();
        } else if is("allchannels") || is("&*") {
            self.allchannels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.allchannels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.set_all(true);
        } else if is("nocommands") || is("-@all") {
            self.set_all(false);
        } else if op[0] == b'~' || op[0] == b'%' {
            if self.allkeys {
                return Err(RuleError::KeyAfterAll);
            }
            let (perm, offset) = if op[0] == b'%' {
                let mut perm = 0;
                let mut i = 1;
                loop {
                    match op.get(i).map(u8::to_ascii_uppercase) {
                        Some(b'R') if perm & READ == 0 => perm |= READ,
                        Some(b'W') if perm & WRITE == 0 => perm |= WRITE,
                        Some(b'~') => break,
                        _ => return Err(RuleError::Syntax),
                    }
                    i += 1;
                }
                (perm, i + 1)
            } else {
                (READ_WRITE, 1)
            };
            let pattern = &op[offset..];
            if has_spaces(pattern) {
                return Err(RuleError::Syntax);
            }
            match self.keys.iter_mut().find(|k| k.pattern == pattern) {
                Some(k) => k.perm |= perm,
                None => self.keys.push(KeyPattern {
                    pattern: pattern.to_vec(),
                    perm,
                }),
            }
        } else if op[0] == b'&' {
            if self.allchannels {
                return Err(RuleError::ChannelAfterAll);
            }
            let pattern = &op[1..];
            if has_spaces(pattern) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c == pattern) {
                self.channels.push(pattern.to_vec());
            }
        } else if op.len() > 1 && (op[0] == b'+' || op[0] == b'-') && op[1] == b'@' {
            let bit = category::from_name(&String::from_utf8_lossy(&op[2..]));
            if bit == 0 {
                return Err(RuleError::UnknownCommand);
            }
            self.set_category(cat, bit, op[0] == b'+');
            self.record_rule(&op[1..], op[0] == b'+');
        } else if op[0] == b'+' {
            let name = &op[1..];
            match name.iter().rposition(|&c| c == b'|') {
                None => {
                    let id = cat.lookup(name).ok_or(RuleError::UnknownCommand)?;
                    self.change_perm(cat, id, true);
                    let full = cat.entry(id).name.clone();
                    self.record_rule(full.as_bytes(), true);
                }
                Some(bar) => {
                    let (top, sub) = (&name[..bar], &name[bar + 1..]);
                    let id = cat.lookup(top).ok_or(RuleError::UnknownCommand)?;
                    if cat.entry(id).parent.is_some() {
                        return Err(RuleError::SubcommandFirstArg);
                    }
                    if sub.is_empty() {
                        return Err(RuleError::Syntax);
                    }
                    if cat.entry(id).subs.is_empty() {
                        // A first argument of a command without
                        // subcommands (`+select|0`): Redis keeps it as a
                        // deprecated way of allowing one argument.
                        let sub = sub.to_ascii_lowercase();
                        match self.firstargs.iter_mut().find(|(i, _)| *i == id) {
                            Some((_, list)) => {
                                if !list.iter().any(|a| a.eq_ignore_ascii_case(&sub)) {
                                    list.push(sub);
                                }
                            }
                            None => self.firstargs.push((id, vec![sub])),
                        }
                    } else {
                        let id = cat.lookup(name).ok_or(RuleError::UnknownCommand)?;
                        self.change_perm(cat, id, true);
                    }
                    self.record_rule(name, true);
                }
            }
        } else if op[0] == b'-' {
            let id = cat.lookup(&op[1..]).ok_or(RuleError::UnknownCommand)?;
            self.change_perm(cat, id, false);
            let full = cat.entry(id).name.clone();
            self.record_rule(full.as_bytes(), false);
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// Commands allowed (on) and denied (off) among those in a category.
    fn count_category(&self, cat: &Catalog, bit: u32) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for id in 0..cat.len() {
            if cat.entry(id).categories & bit != 0 {
                if self.bit(id) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    /// Redis 7.2's ACLDescribeSelectorCommandRules: `+@all` or `-@all`,
    /// then the rules as they were given since.
    fn describe_rules(&self) -> Vec<u8> {
        let mut out: Vec<u8> = if self.future {
            b"+@all".to_vec()
        } else {
            b"-@all".to_vec()
        };
        for r in &self.rules {
            out.push(b' ');
            out.extend_from_slice(r);
        }
        out
    }

    /// Redis 7.0's ACLDescribeSelectorCommandRules: the shortest rules Redis finds
    /// that rebuild the command bits: `+@all` or `-@all`, then the
    /// categories that fit best (greedily), then single commands.
    pub fn describe_commands(&self, cat: &Catalog) -> Vec<u8> {
        if crate::speaks_7_4() {
            return self.describe_rules();
        }
        let mut rules: Vec<u8> = Vec::new();
        let additive = !self.future;
        let mut fake = Selector::new(cat, false);
        fake.set_all(!additive);
        rules.extend_from_slice(if additive { b"-@all " } else { b"+@all " });
        let mut temp = self.clone();
        let mut applied = [false; category::NAMES.len()];
        loop {
            let mut best = None;
            let (mut mindiff, mut maxsame) = (usize::MAX, 0);
            for (j, _) in category::NAMES.iter().enumerate() {
                if applied[j] {
                    continue;
                }
                let (on, off) = temp.count_category(cat, 1 << j);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                    best = Some(j);
                    mindiff = diff;
                    maxsame = same;
                }
            }
            let Some(j) = best else { break };
            fake.set_category(cat, 1 << j, additive);
            temp.set_category(cat, 1 << j, !additive);
            rules.push(if additive { b'+' } else { b'-' });
            rules.push(b'@');
            rules.extend_from_slice(category::NAMES[j].as_bytes());
            rules.push(b' ');
            applied[j] = true;
        }
        for id in 0..cat.len() {
            let user = self.bit(id);
            if user != fake.bit(id) {
                rules.push(if user { b'+' } else { b'-' });
                rules.extend_from_slice(cat.entry(id).name.as_bytes());
                rules.push(b' ');
                fake.change_perm(cat, id, user);
            }
            if !user {
                if let Some((_, args)) = self.firstargs.iter().find(|(i, _)| *i == id) {
                    for a in args {
                        rules.push(b'+');
                        rules.extend_from_slice(cat.entry(id).name.as_bytes());
                        rules.push(b'|');
                        rules.extend_from_slice(a);
                        rules.push(b' ');
                    }
                }
            }
        }
        rules.pop();
        rules
    }

    /// The key patterns as GETUSER shows them.
    pub fn describe_keys(&self) -> Vec<u8> {
        if self.allkeys {
            return b"~*".to_vec();
        }
        let mut out = Vec::new();
        for (i, k) in self.keys.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            k.describe(&mut out);
        }
        out
    }

    /// The channel patterns as GETUSER shows them.
    pub fn describe_channels(&self) -> Vec<u8> {
        if self.allchannels {
            return b"&*".to_vec();
        }
        let mut out = Vec::new();
        for (i, c) in self.channels.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            out.push(b'&');
            out.extend_from_slice(c);
        }
        out
    }

    /// ACLDescribeSelector: keys, channels, commands, as ACL LIST shows.
    fn describe(&self, cat: &Catalog) -> Vec<u8> {
        let mut out = Vec::new();
        if self.allkeys {
            out.extend_from_slice(b"~* ");
        } else {
            for k in &self.keys {
                k.describe(&mut out);
                out.push(b' ');
            }
        }
        if self.allchannels {
            out.extend_from_slice(b"&* ");
        } else {
            out.extend_from_slice(b"resetchannels ");
            for c in &self.channels {
                out.push(b'&');
                out.extend_from_slice(c);
                out.push(b' ');
            }
        }
        out.extend_from_slice(&self.describe_commands(cat));
        out
    }

    /// ACLSelectorCheckCmd.
    fn check(&self, cmd: &Command, argv: &[&[u8]]) -> Result<(), Denied> {
        if !self.allcommands && !cmd.has(flag::NO_AUTH) && !self.bit(cmd.acl_id) {
            let idx = if cmd.name.contains('|') { 2 } else { 1 };
            let allowed = argv.len() >= 2
                && self
                    .firstargs
                    .iter()
                    .find(|(i, _)| *i == cmd.acl_id)
                    .is_some_and(|(_, args)| {
                        argv.get(idx)
                            .is_some_and(|a| args.iter().any(|x| x.eq_ignore_ascii_case(a)))
                    });
            if !allowed {
                return Err(Denied::Command);
            }
        }
        if !self.allkeys && cmd.has_key_args() {
            let mut denied = None;
            cmd.for_each_key_access(argv, |pos, perm| {
                if self.key_allowed(argv[pos], perm) {
                    true
                } else {
                    denied = Some(pos);
                    false
                }
            });
            if let Some(pos) = denied {
                return Err(Denied::Key(pos));
            }
        }
        if !self.allchannels {
            if let Some((first, literal_patterns)) = channel_args(cmd) {
                let end = if first.1 {
                    argv.len()
                } else {
                    2.min(argv.len())
                };
                for (pos, ch) in argv.iter().enumerate().take(end).skip(first.0) {
                    if !self.channel_allowed(ch, literal_patterns) {
                        return Err(Denied::Channel(pos));
                    }
                }
            }
        }
        Ok(())
    }

    /// ACLSelectorCheckKey: some pattern with every permission the access
    /// needs matches the key.
    pub fn key_allowed(&self, key: &[u8], perm: u8) -> bool {
        self.allkeys
            || self
                .keys
                .iter()
                .any(|p| p.perm & perm == perm && glob::matches(&p.pattern, key, false))
    }

    /// ACLCheckChannelAgainstList: a PSUBSCRIBE pattern must equal an
    /// allowed pattern; a channel must match one.
    pub fn channel_allowed(&self, channel: &[u8], literal: bool) -> bool {
        self.allchannels
            || self.channels.iter().any(|p| {
                if literal {
                    p == channel
                } else {
                    glob::matches(p, channel, false)
                }
            })
    }
}

/// The channel arguments of the commands that name channels (Redis's
/// ACLDoesCommandHaveChannels): ((first position, all the rest), whether
/// they are patterns compared literally).
fn channel_args(cmd: &Command) -> Option<((usize, bool), bool)> {
    match cmd.name.as_str() {
        "publish" | "spublish" => Some(((1, false), false)),
        "subscribe" | "ssubscribe" => Some(((1, true), false)),
        "psubscribe" => Some(((1, true), true)),
        _ => None,
    }
}

/// ACLStringHasSpaces: usernames and patterns may not hold spaces or NULs.
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c == 0 || c.is_ascii_whitespace() || c == 0x0b)
}

/// The SHA-256 of a password in lower-case hex, as Redis stores it.
pub fn hash_password(password: &[u8]) -> String {
    let digest = Sha256::digest(password);
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push(char::from(b"0123456789abcdef"[(b >> 4) as usize]));
        hex.push(char::from(b"0123456789abcdef"[(b & 15) as usize]));
    }
    hex
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// Compares two hashes without an early exit, so the time taken tells an
/// attacker nothing about how much of a guess was right.
fn same_hash(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// `skip-sanitize-payload` / `sanitize-payload` (RESTORE's payload check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sanitize {
    Unset,
    Skip,
    Check,
}

#[derive(Debug, Clone)]
pub struct User {
    pub name: Vec<u8>,
    pub enabled: bool,
    pub nopass: bool,
    pub sanitize: Sanitize,
    /// SHA-256 hex of each password, in the order added.
    pub passwords: Vec<String>,
    /// The root selector first, then those added with `(...)`.
    pub selectors: Vec<Selector>,
    /// Some selector allows every command, key and channel: the check can
    /// be skipped (the default user's common case).
    unrestricted: bool,
}

impl User {
    /// A new user as ACL SETUSER creates it: off, no passwords, no
    /// permissions.
    pub fn new(cat: &Catalog, name: &[u8], pubsub_all: bool) -> User {
        User {
            name: name.to_vec(),
            enabled: false,
            nopass: false,
            // Redis 7.2 creates users with `sanitize-payload`.
            sanitize: if crate::speaks_7_4() {
                Sanitize::Check
            } else {
                Sanitize::Unset
            },
            passwords: Vec::new(),
            selectors: vec![Selector::new(cat, pubsub_all)],
            unrestricted: false,
        }
    }

    /// The default user of a fresh server: on, nopass, everything.
    pub fn default_user(cat: &Catalog, pubsub_all: bool) -> User {
        let mut u = User::new(cat, b"default", pubsub_all);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            // These rules are valid by construction.
            let _ = u.set_op(cat, op.as_bytes(), pubsub_all);
        }
        u
    }

    /// ACLSetUser: one rule (user flags, passwords, selectors, or a rule
    /// for the root selector).
    pub fn set_op(&mut self, cat: &Catalog, op: &[u8], pubsub_all: bool) -> Result<(), RuleError> {
        let r = self.apply(cat, op, pubsub_all);
        self.unrestricted = self
            .selectors
            .iter()
            .any(|s| s.allcommands && s.allkeys && s.allchannels);
        r
    }

    fn apply(&mut self, cat: &Catalog, op: &[u8], pubsub_all: bool) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        let is = |s: &str| op.eq_ignore_ascii_case(s.as_bytes());
        if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize = Sanitize::Skip;
        } else if is("sanitize-payload") {
            self.sanitize = Sanitize::Check;
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let hash = if op[0] == b'>' {
                hash_password(&op[1..])
            } else {
                if !valid_hash(&op[1..]) {
                    return Err(RuleError::BadHash);
                }
                String::from_utf8_lossy(&op[1..]).into_owned()
            };
            if !self.passwords.contains(&hash) {
                self.passwords.push(hash);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let hash = if op[0] == b'<' {
                hash_password(&op[1..])
            } else {
                if !valid_hash(&op[1..]) {
                    return Err(RuleError::BadHash);
                }
                String::from_utf8_lossy(&op[1..]).into_owned()
            };
            let at = self
                .passwords
                .iter()
                .position(|p| *p == hash)
                .ok_or(RuleError::NoSuchPassword)?;
            self.passwords.remove(at);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let mut s = Selector::new(cat, pubsub_all);
            let inner = &op[1..op.len() - 1];
            let mut buf = Vec::new();
            let mut ranges = Vec::new();
            resp::request::split_args(inner, &mut buf, &mut ranges)
                .map_err(|_| RuleError::Syntax)?;
            for &(start, len) in &ranges {
                s.set_op(cat, &buf[start..start + len])?;
            }
            self.selectors.push(s);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            self.passwords.clear();
            self.nopass = false;
            let root = &mut self.selectors[0];
            root.allkeys = false;
            root.keys.clear();
            root.allchannels = pubsub_all;
            root.channels.clear();
            self.enabled = false;
            self.sanitize = Sanitize::Check;
            self.selectors.truncate(1);
            self.selectors[0].set_all(false);
        } else {
            self.selectors[0].set_op(cat, op)?;
        }
        Ok(())
    }

    /// Whether `password` is one of the user's (any password for nopass).
    pub fn password_ok(&self, password: &[u8]) -> bool {
        if self.nopass {
            return true;
        }
        let hashed = hash_password(password);
        // Every stored hash is compared, matched or not.
        self.passwords.iter().fold(false, |ok, p| {
            same_hash(hashed.as_bytes(), p.as_bytes()) | ok
        })
    }

    /// ACLCheckAllUserCommandPerm: allowed when a selector allows it;
    /// otherwise the most relevant refusal.
    #[inline]
    pub fn check(&self, cmd: &Command, argv: &[&[u8]]) -> Result<(), Denied> {
        if self.unrestricted {
            return Ok(());
        }
        let mut relevant = Denied::Command;
        for s in &self.selectors {
            match s.check(cmd, argv) {
                Ok(()) => return Ok(()),
                Err(d) => relevant = relevant.max(d),
            }
        }
        Err(relevant)
    }

    /// ACLUserCheckChannelPerm (for the pub/sub clients kept after a
    /// change of the user's channels).
    pub fn channel_allowed(&self, channel: &[u8], literal: bool) -> bool {
        self.selectors
            .iter()
            .any(|s| s.channel_allowed(channel, literal))
    }

    /// Whether some selector allows every channel.
    pub fn all_channels(&self) -> bool {
        self.selectors.iter().any(|s| s.allchannels)
    }

    /// The channel patterns of every selector.
    pub fn channel_patterns(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.selectors.iter().flat_map(|s| s.channels.iter())
    }

    /// The user flags in Redis's order (on, off, nopass, skip-sanitize-
    /// payload, sanitize-payload).
    pub fn flags(&self) -> Vec<&'static str> {
        let mut f = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        match self.sanitize {
            Sanitize::Skip => f.push("skip-sanitize-payload"),
            Sanitize::Check => f.push("sanitize-payload"),
            Sanitize::Unset => {}
        }
        f
    }

    /// ACLDescribeUser: the rules that rebuild the user, as ACL LIST and
    /// the ACL file hold them (without the `user <name>` prefix).
    pub fn describe(&self, cat: &Catalog) -> Vec<u8> {
        let mut out = Vec::new();
        for f in self.flags() {
            out.extend_from_slice(f.as_bytes());
            out.push(b' ');
        }
        for p in &self.passwords {
            out.push(b'#');
            out.extend_from_slice(p.as_bytes());
            out.push(b' ');
        }
        for (i, s) in self.selectors.iter().enumerate() {
            if i == 0 {
                out.extend_from_slice(&s.describe(cat));
            } else {
                out.extend_from_slice(b" (");
                out.extend_from_slice(&s.describe(cat));
                out.push(b')');
            }
        }
        out
    }
}

/// ACLMergeSelectorArguments: a selector given over several arguments
/// (`(+get` `~x)`) becomes one. `Err(i)`: the selector opened at argument
/// `i` is never closed.
pub fn merge_selector_args(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::new();
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, op) in args.iter().enumerate() {
        if let Some((_, sel)) = open.as_mut() {
            sel.push(b' ');
            sel.extend_from_slice(op);
            if op.last() == Some(&b')') {
                if let Some((_, sel)) = open.take() {
                    out.push(sel);
                }
            }
            continue;
        }
        if op.first() == Some(&b'(') && op.last() != Some(&b')') {
            open = Some((i, op.to_vec()));
            continue;
        }
        out.push(op.to_vec());
    }
    match open {
        Some((i, _)) => Err(i),
        None => Ok(out),
    }
}
