//! Integration tests: one binary, one module per area.

mod action;
mod api_lenses;
mod app_auth;
mod backends;
mod check_run;
mod cli;
mod conversations;
mod eval;
mod fake_github;
mod faults;
mod hardening;
mod intake;
mod layers;
mod log_capture;
mod pr;
mod rules;
mod serve;
mod snapshot;
mod store;
mod verify;
