//! `reviewbot serve`: the HTTP side of the App.

pub mod signature;
