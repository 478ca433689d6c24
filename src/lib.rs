//! reviewbot: reviews pull requests with a panel of lenses.
//!
//! The pipeline reads top to bottom, one module a stage:
//!
//! - trigger: `cli` (the CLI's flags and the Actions event) builds a
//!   [`flow::ReviewRequest`]; every trigger calls the one [`flow::review_pr`];
//! - `flow`: `flow::gather` (every GitHub read) → `review::gate` (whether a round runs) →
//!   `review::scope` (what it reviews) → `plan` → `lens` + `review::panel` (the panel) →
//!   `review::finding` (place) → `review::merge` (merge) → `review::rounds` (settle) →
//!   `render` → `flow::post` (every GitHub write);
//! - `--diff` runs the middle alone: `diff` → `review::pipeline` → `render`.
//!
//! Below them: `lens::contract` (what every lens answers), `diff`, `github` (the REST client),
//! `config`, `ids`, `redact`, `evidence`. A module imports only from its own stage or below.

pub mod attributes;
pub mod cli;
pub mod config;
pub mod context;
pub mod credentials;
pub mod diff;
pub mod doctor;
pub mod evidence;
pub mod flow;
pub mod github;
pub mod ids;
pub mod lens;
pub mod par;
pub mod plan;
pub mod redact;
pub mod render;
pub mod repo_rules;
pub mod request;
pub mod review;
pub mod sanitize;
pub mod server;
pub mod store;
pub mod timing;
pub mod unicode;
