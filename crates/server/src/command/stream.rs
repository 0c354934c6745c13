//! Stream commands.

use super::table::Registry;

pub(super) fn register(_r: &mut Registry) {}
