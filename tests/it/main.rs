//! Integration tests: one binary, one module per area.

mod cli;
mod fake_github;
mod pr;
mod backends;
