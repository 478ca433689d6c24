//! Test support of the crate's own tests, in one place: a scripted HTTP server for the API
//! backends, the fake agent CLIs' harness, and a scripted model that real agent CLIs and the API
//! tool loops talk to.

pub(crate) mod api_server;
pub(crate) mod fake_cli;
pub(crate) mod fake_model;
