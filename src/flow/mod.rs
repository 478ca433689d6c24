//! The review flow every trigger shares: a [`request::ReviewRequest`] in, a posted (or printed)
//! round out.

pub mod request;
pub mod trigger;
