//! Running the lenses of a panel concurrently.
