//! The GitHub boundary: the REST client and the types it hands to the domain. Nothing outside
//! this module sees HTTP or octocrab.

pub mod client;
pub mod events;
pub mod model;
