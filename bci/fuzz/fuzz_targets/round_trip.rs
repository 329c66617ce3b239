//! Identity round trip of anything that parses is byte-identical (writing is a fixed point).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(cf) = bci::ClassFile::parse(data) {
        let out = bci::ClassWriter::new(&cf).finish().expect("identity write cannot fail");
        assert_eq!(out, data);
    }
});
