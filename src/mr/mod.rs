//! The registration engine: safe Rust, independent of any provider and of C
//! types.

pub mod registry;
