//! Parse and fully check arbitrary bytes: never panics; errors carry a path.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match bci::ClassFile::parse(data) {
        Ok(cf) => {
            if let Err(e) = cf.check() {
                assert!(!e.path().is_empty(), "error without path: {e}");
            }
        }
        Err(e) => assert!(!e.path().is_empty(), "error without path: {e}"),
    }
});
