//! The `builtin` lens: deterministic checks on added lines, no model.
