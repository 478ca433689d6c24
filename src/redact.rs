//! Secret detection and masking: the one function every output goes through.
