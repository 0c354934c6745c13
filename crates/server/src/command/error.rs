//! Command errors: replies to the client, word for word as Redis 7, after
//! which the connection stays open.

use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdError(pub Cow<'static, str>);

pub type CmdResult = Result<(), CmdError>;

impl CmdError {
    pub fn new(msg: impl Into<Cow<'static, str>>) -> CmdError {
        CmdError(msg.into())
    }
}

macro_rules! errors {
    ($($name:ident = $text:expr;)*) => {
        $(pub const $name: CmdError = CmdError(Cow::Borrowed($text));)*
    };
}

errors! {
    WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value";
    SYNTAX = "ERR syntax error";
    NOT_INTEGER = "ERR value is not an integer or out of range";
    NOT_FLOAT = "ERR value is not a valid float";
    OVERFLOW = "ERR increment or decrement would overflow";
    INCR_FLOAT_NAN = "ERR increment would produce NaN or Infinity";
    DB_RANGE = "ERR DB index is out of range";
    NO_SUCH_KEY = "ERR no such key";
    STRING_TOO_LONG = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
    OFFSET_RANGE = "ERR offset is out of range";
    NEGATIVE_TIMEOUT = "ERR timeout is negative";
    SAME_OBJECT = "ERR source and destination objects are the same";
    MISCONF_RDB = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";
}

/// `ERR wrong number of arguments for 'name' command`.
pub fn wrong_arity(name: &str) -> CmdError {
    CmdError::new(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// `ERR invalid expire time in 'name' command`.
pub fn invalid_expire(name: &str) -> CmdError {
    CmdError::new(format!("ERR invalid expire time in '{name}' command"))
}

/// `ERR unknown subcommand 'x'. Try CONTAINER HELP.`
pub fn unknown_subcommand(container: &[u8], sub: &[u8]) -> CmdError {
    CmdError::new(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        truncate(sub, 128),
        String::from_utf8_lossy(container).to_uppercase()
    ))
}

pub fn truncate(b: &[u8], n: usize) -> Cow<'_, str> {
    String::from_utf8_lossy(&b[..b.len().min(n)])
}

/// Redis's addReplySubcommandSyntaxError: a subcommand with the wrong
/// number of arguments (`argv[1]` as the client wrote it).
pub fn subcommand_syntax(argv: &[&[u8]]) -> CmdError {
    CmdError::new(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        truncate(argv[1], 128),
        String::from_utf8_lossy(argv[0]).to_uppercase()
    ))
}
