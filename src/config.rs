//! The config file (TOML, DESIGN.md "Config file").
