//! The lens-response parser (fenced JSON, prose around it, arrays, several objects): never
//! panics; what it accepts survives a round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reviewbot::lens::contract::LensResponse;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(response) = LensResponse::parse(text) {
        let again = serde_json::to_string(&response).expect("a parsed response serialises");
        assert_eq!(LensResponse::parse(&again).as_ref(), Ok(&response));
    }
});
