//! Every command Redis 7.0 knows (implemented by keel or not), numbered
//! for the ACL command bitmaps, as Redis's `orig_commands` table with
//! command ids. ACL rules name commands of this catalog, so `+geoadd` or
//! `-@hyperloglog` mean what they mean to Redis, and the best-fit
//! description of a user's rules (ACL LIST) counts categories as Redis
//! counts them.

use std::collections::HashMap;

pub use crate::command::table::category;

pub struct Entry {
    /// Full lower-case name: `get`, `config|get`.
    pub name: String,
    /// ACL category bits.
    pub categories: u32,
    pub parent: Option<usize>,
    pub subs: Vec<usize>,
}

#[derive(Default)]
pub struct Catalog {
    entries: Vec<Entry>,
    by_name: HashMap<String, usize>,
}

impl Catalog {
    /// Adds a command (a container's subcommands right after it); returns
    /// its id.
    pub fn push(&mut self, name: &str, categories: u32, parent: Option<usize>) -> usize {
        let id = self.entries.len();
        self.entries.push(Entry {
            name: name.to_ascii_lowercase(),
            categories,
            parent,
            subs: Vec::new(),
        });
        if let Some(p) = parent {
            self.entries[p].subs.push(id);
        }
        self.by_name.insert(name.to_ascii_lowercase(), id);
        id
    }

    /// The id of `name` (`get`, `config|get`), case-insensitively.
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let name = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        self.by_name.get(&name).copied()
    }

    pub fn entry(&self, id: usize) -> &Entry {
        &self.entries[id]
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Full names of the commands in a category (ACL CAT <category>).
    pub fn in_category(&self, bit: u32) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .filter(move |e| e.categories & bit != 0)
            .map(|e| e.name.as_str())
    }
}
