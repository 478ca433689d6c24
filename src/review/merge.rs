//! Merging findings from several lenses (DESIGN.md "Merging, pinned").
