//! Text for error numbers, as `fi_strerror` returns it.

/// The message for a positive error number.
pub fn strerror(errnum: i32) -> &'static str {
    let _ = errnum;
    "Unspecified error"
}
