//! The `memhooks` monitor: intercepts munmap, mremap, madvise, brk and sbrk
//! of the loaded objects at the ELF level.

use crate::error::{Error, Result};

pub fn start() -> Result<()> {
    Err(Error::NOSYS)
}
