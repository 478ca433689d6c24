//! reviewbot: reviews pull requests with a panel of lenses.
//!
//! The pipeline reads top to bottom, one module a stage:
//!
//! - trigger: `cli` (the CLI's flags and the Actions event) builds a
//!   [`flow::ReviewRequest`]; every trigger calls the one [`flow::review_pr`];
//! - `flow`: `flow::gather` (every GitHub read) → `review::gate` (whether a round runs) →
//!   `review::scope` (what it reviews) → `plan` → `lens` + `review::panel` (the panel) →
//!   `review::finding` (place) → `review::merge` (merge) → `review::rounds` (settle) →
//!   `render` → `flow::post` (the round's review), `flow::check` (its check run) and
//!   `flow::converse` (answers in threads): the GitHub writes;
//! - `--diff` runs the middle alone: `diff` → `review::pipeline` → `render`.
//!
//! Below them: `lens::contract` (what every lens answers), `lens::registry` (every backend, one
//! arm each; a vendor is its own file), `diff`, `github` (the REST client), `config`, `ids`,
//! `learning` (a writer's ruling, kept and shown to later rounds), `redact` and `credentials`
//! (what is masked), `evidence`, `request` (what a trigger asks for), `chars` (text cut to a
//! number of characters). Test support is `testing` (compiled for the crate's tests only).
//!
//! Only `flow` writes to a pull request (`flow::post` its review, `flow::check` its check run,
//! `flow::converse` answers in threads); `github::app` mints the App's installation tokens. The
//! domain modules (`review`, `plan`, `diff`, `render`) never see HTTP.
//!
//! Each module imports only from layers below its own; `tests/it/layers.rs` holds the code to
//! the line after this one. Layers, bottom to top:
//! `ids`, `learning`, `chars`, `unicode`, `par`, `timing`, `redact`, `attributes` <
//! `credentials`, `diff`, `sanitize` < `lens`, `repo_rules` < `config`, `evidence` < `github`,
//! `plan` < `context`, `doctor`, `request` < `review`, `store` < `eval` < `render` < `flow` <
//! `server` < `cli`

pub(crate) mod attributes;
pub(crate) mod chars;
pub mod cli;
pub mod config;
pub mod context;
pub(crate) mod credentials;
pub mod diff;
pub(crate) mod doctor;
pub(crate) mod eval;
pub(crate) mod evidence;
pub mod flow;
pub mod github;
pub mod ids;
pub mod learning;
pub mod lens;
pub(crate) mod par;
pub mod plan;
pub mod redact;
pub mod render;
pub(crate) mod repo_rules;
pub mod request;
pub mod review;
pub mod sanitize;
pub mod server;
pub mod store;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod timing;
pub mod unicode;
