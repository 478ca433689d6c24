//! The webhook event parser on any body, under each event name the intake handles: never
//! panics; an event it reads is decided by the trigger stage without a panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reviewbot::flow::trigger::request_for;
use reviewbot::github::events::Event;

const EVENTS: [&str; 4] = ["pull_request", "issue_comment", "ping", "installation"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let name = EVENTS[usize::from(pick) % EVENTS.len()];
    if let Ok(event) = Event::parse(name, body) {
        let _ = request_for(&event, "reviewbot[bot]");
    }
});
