//! Numbers as Redis writes and computes them: doubles printed as C's `%g`
//! and `%.17g` ([`double`]), and the platform's `long double` for
//! INCRBYFLOAT ([`long_double`]); and read them as C does: `strtod`
//! ([`strtod`]), `atoi` and `strtoll` ([`strtol`]). Shared by the
//! commands, scripting, configuration and persistence.

pub mod double;
pub mod long_double;
pub mod strtod;
pub mod strtol;
