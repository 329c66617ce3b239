//! `ClassFile::method` and `ClassFile::method_code`, on a JDK class: the method with the
//! name (and descriptor, when given), its parsed code, and None where there is none.
mod common;

use bci::ClassFile;

#[test]
fn methods_and_their_code_by_name_and_descriptor() {
    let dir = common::jdk_corpus();
    let bytes = std::fs::read(dir.join("java.base/java/util/AbstractList.class")).unwrap();
    let cf = ClassFile::parse(&bytes).unwrap();
    // overloads: the descriptor picks one, and each has its own code
    let add1 = cf.method("add", Some("(Ljava/lang/Object;)Z")).unwrap();
    let add2 = cf.method("add", Some("(ILjava/lang/Object;)V")).unwrap();
    assert_eq!(cf.member_desc(add1), "(Ljava/lang/Object;)Z");
    assert_eq!(cf.member_desc(add2), "(ILjava/lang/Object;)V");
    let c1 = cf
        .method_code("add", Some("(Ljava/lang/Object;)Z"))
        .unwrap()
        .unwrap();
    let c2 = cf
        .method_code("add", Some("(ILjava/lang/Object;)V"))
        .unwrap()
        .unwrap();
    assert_ne!(c1.code, c2.code);
    // without a descriptor: the first of that name, in class-file order
    let first = cf
        .methods
        .iter()
        .find(|m| cf.member_name(m) == "add")
        .unwrap();
    assert_eq!(
        cf.member_desc(cf.method("add", None).unwrap()),
        cf.member_desc(first)
    );
    // abstract (no Code attribute), a missing name, a wrong descriptor
    assert!(cf.method("get", Some("(I)Ljava/lang/Object;")).is_some());
    assert!(cf
        .method_code("get", Some("(I)Ljava/lang/Object;"))
        .unwrap()
        .is_none());
    assert!(cf.method("noSuchMethod", None).is_none());
    assert!(cf.method_index("noSuchMethod", None).is_none());
    // the index names the same member
    let k = cf
        .method_index("add", Some("(ILjava/lang/Object;)V"))
        .unwrap();
    assert!(std::ptr::eq(&cf.methods[k], add2));
    assert!(cf.method_code("noSuchMethod", None).unwrap().is_none());
    assert!(cf.method("add", Some("()V")).is_none());
}
