//! All user-facing text: terminal, JSON, Markdown, SARIF.
