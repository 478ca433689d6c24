//! Integration tests: one binary, one module per area.

mod action;
mod backends;
mod cli;
mod fake_github;
mod hardening;
mod pr;
