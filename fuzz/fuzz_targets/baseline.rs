//! The metric baseline reader (`--baseline FILE`): any bytes give a baseline or a located
//! error; a baseline it reads renders (`harness bless`) to a file it reads again.
#![no_main]

use harness::gate::baseline;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(b) = baseline::parse(text) {
        let again = baseline::render(&b);
        if let Err(e) = baseline::parse(&again) {
            panic!("a rendered baseline does not read back: {e}\n{again}");
        }
    }
});
