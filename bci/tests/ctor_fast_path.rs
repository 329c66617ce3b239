//! A constructor's super()/this() call is found without the typed simulation when its code
//! runs straight up to the call (`MethodEditor::straight_init_call`). Over every constructor
//! of the JDK 17 image it must name the call the simulation names, and decide most of them.
mod common;

use bci::{ClassFile, MethodEditor};

#[test]
fn straight_constructors_find_the_call_the_simulation_finds() {
    let dir = common::jdk_corpus();
    let (mut ctors, mut fast) = (0usize, 0usize);
    for f in common::class_files(&dir) {
        let bytes = std::fs::read(&f).unwrap();
        let Ok(cf) = ClassFile::parse(&bytes) else {
            continue;
        };
        for (k, m) in cf.methods.iter().enumerate() {
            if cf.member_name(m) != "<init>" {
                continue;
            }
            let Ok(ed) = MethodEditor::new(&cf, k) else {
                continue;
            };
            let (quick, slow) = ed.first_init_call_both_ways().unwrap();
            ctors += 1;
            if let Some(q) = quick {
                fast += 1;
                assert_eq!(
                    slow,
                    vec![q],
                    "{}: the straight scan and the simulation disagree",
                    cf.method_path(m)
                );
            }
        }
    }
    eprintln!("{fast} of {ctors} constructors decided by the straight scan");
    assert!(ctors > 20_000, "{ctors} constructors");
    assert!(
        fast * 10 > ctors * 9,
        "only {fast} of {ctors} by the straight scan"
    );
}
