//! Rewrite with the cpu-times probes: never panics; what is written parses, and checks whenever
//! the input checked (rewriting preserves validity); rewriting again is deterministic.
#![no_main]
use bci_rewriter::{instrument, Outcome, Rules, SequentialIds};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let rules = Rules::cpu_times();
    if let Ok(Outcome::Rewritten(b)) = instrument(data, &rules, &mut SequentialIds(0)) {
        let cf = bci::ClassFile::parse(&b).expect("our output parses");
        let input_ok = bci::ClassFile::parse(data).is_ok_and(|i| i.check().is_ok());
        if input_ok {
            cf.check().expect("our output checks");
        }
        let again = instrument(data, &rules, &mut SequentialIds(0));
        assert_eq!(again, Ok(Outcome::Rewritten(b)));
    }
});
