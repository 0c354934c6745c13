//! A request resolved once: its command (subcommand followed, arity
//! checked), its arguments, and where its keys are with their slots.
//!
//! Every step after resolution reads the request from its `Call`: the
//! gates, the cluster gate and its second look under the locks, locking,
//! the persistence hooks, tracking and EXEC (its queue holds resolved
//! requests, `Queued`), so the command table is searched and the key specs
//! evaluated once per request.

use super::error::CmdError;
use super::table::{Command, CommandTable};

/// One key of a request: its argument's position and its hash slot.
/// (Eight bytes, aligned as a `usize`: the positions' vector becomes the
/// keys' in place, without a second allocation.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct Key {
    pos: u32,
    slot: u16,
}

impl Key {
    #[inline]
    fn at(argv: &[&[u8]], pos: usize) -> Key {
        Key {
            pos: pos as u32,
            slot: resp::slot::key_slot(argv[pos]) as u16,
        }
    }

    /// The key's argument's position.
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos as usize
    }

    /// The key's hash slot.
    #[inline]
    pub fn slot(&self) -> usize {
        self.slot as usize
    }
}

/// A request's keys, in the order its key specs give them. One key (the
/// common case) is kept without allocating.
#[derive(Clone, Debug, Default)]
pub enum Keys {
    #[default]
    None,
    One(Key),
    Many(Vec<Key>),
}

impl Keys {
    /// The keys of `argv` for `cmd`.
    #[inline]
    fn of(cmd: &Command, argv: &[&[u8]]) -> Keys {
        let key = |pos: usize| Key::at(argv, pos);
        if let Some(pos) = cmd.single_key {
            return match argv.get(pos) {
                Some(_) => Keys::One(key(pos)),
                None => Keys::None,
            };
        }
        if !cmd.has_key_specs() {
            return Keys::None;
        }
        // Sized once: a key per argument at most (MSET's ten keys grew it
        // three times).
        let mut pos = Vec::with_capacity(argv.len());
        cmd.key_positions(argv, &mut pos);
        match pos.as_slice() {
            [] => Keys::None,
            [p] => Keys::One(key(*p)),
            _ => Keys::Many(pos.into_iter().map(key).collect()),
        }
    }

    pub fn as_slice(&self) -> &[Key] {
        match self {
            Keys::None => &[],
            Keys::One(k) => std::slice::from_ref(k),
            Keys::Many(v) => v,
        }
    }
}

/// A request resolved once (see the module's doc).
pub struct Call<'c> {
    pub cmd: &'c Command,
    pub argv: &'c [&'c [u8]],
    keys: Keys,
    /// The flags the gates judge this request by: the command's, or for a
    /// script that declares its flags, what they make of them
    /// ([`Call::declare_flags`]).
    pub flags: u32,
}

impl<'c> Call<'c> {
    /// Resolves `argv`: the command (or its subcommand), arity, keys.
    #[inline]
    pub fn resolve(table: &'c CommandTable, argv: &'c [&'c [u8]]) -> Result<Call<'c>, CmdError> {
        let cmd = super::resolve(table, argv)?;
        Ok(Call::new(cmd, argv))
    }

    /// The request `argv` of the resolved `cmd`.
    #[inline]
    pub fn new(cmd: &'c Command, argv: &'c [&'c [u8]]) -> Call<'c> {
        Call {
            cmd,
            argv,
            keys: Keys::of(cmd, argv),
            flags: cmd.flags,
        }
    }

    /// A request resolved before, with its keys (a queued one).
    pub fn with_keys(cmd: &'c Command, argv: &'c [&'c [u8]], keys: Keys) -> Call<'c> {
        Call {
            cmd,
            argv,
            keys,
            flags: cmd.flags,
        }
    }

    /// Whether the request is judged as having any of the flags `f`.
    #[inline]
    pub fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    /// A script command (EVAL, FCALL, ...) whose script declares flags
    /// (a shebang, or a function) runs with the command flags those make,
    /// as Redis's evalGetCommandFlags / fcallGetCommandFlags: `write`
    /// unless `no-writes`, `denyoom` unless `no-writes` or `allow-oom`,
    /// `stale` only with `allow-stale`, and never may-replicate.
    pub fn declare_flags(&mut self, script: super::table::ScriptFlags) {
        use super::table::flag;
        let mut f = self.flags
            & !(flag::STALE | flag::DENYOOM | flag::WRITE | flag::MAY_REPLICATE | flag::REPLICATES);
        if !script.no_writes && !script.allow_oom {
            f |= flag::DENYOOM;
        }
        if !script.no_writes {
            f |= flag::WRITE;
        }
        if script.allow_stale {
            f |= flag::STALE;
        }
        self.flags = f;
    }

    /// The keys, with their positions and slots.
    #[inline]
    pub fn keys(&self) -> &[Key] {
        self.keys.as_slice()
    }

    /// The key arguments themselves.
    pub fn key_args(&self) -> impl Iterator<Item = &'c [u8]> + '_ {
        self.keys().iter().map(|k| self.argv[k.pos()])
    }

    /// Takes the keys (for a `Queued` request).
    pub fn into_keys(self) -> Keys {
        self.keys
    }
}

/// A request queued by MULTI: resolved when it was queued, run by EXEC
/// without resolving it again.
#[derive(Debug)]
pub struct Queued {
    /// Index of its command in the table (`CommandTable::get`).
    pub cmd: usize,
    pub argv: Vec<Vec<u8>>,
    pub keys: Keys,
}

impl Queued {
    pub fn of(call: &Call) -> Queued {
        Queued {
            cmd: call.cmd.id,
            argv: call.argv.iter().map(|a| a.to_vec()).collect(),
            keys: call.keys.clone(),
        }
    }
}
