//! reviewbot: reviews pull requests with a panel of lenses.
//!
//! The pipeline reads top to bottom, one module a stage:
//! `cli` (trigger) → `diff` (gather) → `plan` → `lens` + `review::panel` (panel)
//! → `review::finding` (parse) → `review::merge` (merge) → `render` (render).

pub mod cli;
pub mod config;
pub mod diff;
pub mod doctor;
pub mod evidence;
pub mod flow;
pub mod github;
pub mod ids;
pub mod lens;
pub mod par;
pub mod plan;
pub mod pr;
pub mod redact;
pub mod render;
pub mod review;
pub mod sanitize;
pub mod unicode;
