//! The GitHub boundary: the REST client, the App's identity and tokens, and the types they hand
//! to the domain. Nothing outside this module sees HTTP or octocrab.

pub mod app;
pub mod client;
pub mod events;
pub mod model;
