//! The sanitizer, the redactor and the output disarming: never panic; sanitizing and
//! redacting are idempotent; nothing hidden, no HTML comment and no workflow command survives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reviewbot::{redact, render, sanitize, unicode};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let once = sanitize::sanitize(text).into_owned();
    assert_eq!(sanitize::sanitize(&once), once.as_str(), "not idempotent");
    assert!(!once.contains("<!--"), "an HTML comment survived");
    assert!(!once.chars().any(unicode::is_hidden), "a hidden character survived");

    let masked = redact::redact(text).into_owned();
    assert_eq!(redact::redact(&masked), masked.as_str(), "redact not idempotent");

    for out in [render::clean(text), render::clean_code(text)] {
        for line in out.split(['\n', '\r']) {
            assert!(!line.trim_start().starts_with("::"), "workflow command: {line:?}");
        }
    }
});
