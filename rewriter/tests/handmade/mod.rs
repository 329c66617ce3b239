//! Hand-assembled class files for the rewriter's tests (version 49: no frames).
#![allow(dead_code)] // each test that includes this module uses some of it

/// A class `C extends Object` with one constructor `desc` of the given code and exception
/// table (start, end, handler, catch type). Constant 8 is `Object.<init>()V`.
pub fn class(desc: &str, max_locals: u16, code: &[u8], handlers: &[[u16; 4]]) -> Vec<u8> {
    let mut b = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 49];
    let utf = |b: &mut Vec<u8>, s: &str| {
        b.push(1);
        b.extend_from_slice(&(s.len() as u16).to_be_bytes());
        b.extend_from_slice(s.as_bytes());
    };
    b.extend_from_slice(&11u16.to_be_bytes());
    utf(&mut b, "C"); // 1
    b.extend_from_slice(&[7, 0, 1]); // 2 Class C
    utf(&mut b, "java/lang/Object"); // 3
    b.extend_from_slice(&[7, 0, 3]); // 4 Class Object
    utf(&mut b, "<init>"); // 5
    utf(&mut b, "()V"); // 6
    b.extend_from_slice(&[12, 0, 5, 0, 6]); // 7 NameAndType
    b.extend_from_slice(&[10, 0, 4, 0, 7]); // 8 Methodref Object.<init>()V
    utf(&mut b, "Code"); // 9
    utf(&mut b, desc); // 10
    b.extend_from_slice(&[0, 0x21, 0, 2, 0, 4, 0, 0, 0, 0, 0, 1]);
    member(&mut b, 1, [5, 10, 9], 2, max_locals, code, handlers);
    b.extend_from_slice(&[0, 0]);
    b
}

/// `C(boolean b) { if (b) super(); else super(); }`
pub fn two_super_calls() -> Vec<u8> {
    class(
        "(Z)V",
        2,
        &[
            0x1b, // 0 iload_1
            0x99, 0, 10,   // 1 ifeq 11
            0x2a, // 4 aload_0
            0xb7, 0, 8, // 5 invokespecial Object.<init>
            0xa7, 0, 7,    // 8 goto 15
            0x2a, // 11 aload_0
            0xb7, 0, 8,    // 12 invokespecial Object.<init>
            0xb1, // 15 return
        ],
        &[],
    )
}

/// Appends a `public static` method: name and descriptor constants, max_stack, max_locals, its
/// code and exception table (start, end, handler, catch type); constant 7 must be "Code".
pub fn method(
    b: &mut Vec<u8>,
    name: u16,
    desc: u16,
    stack: u16,
    locals: u16,
    code: &[u8],
    handlers: &[[u16; 4]],
) {
    member(b, 9, [name, desc, 7], stack, locals, code, handlers);
}

/// Appends a method with access `flags`, its name, descriptor and "Code" constants, and one
/// Code attribute: max_stack, max_locals, code and exception table.
fn member(
    b: &mut Vec<u8>,
    flags: u16,
    [name, desc, code_name]: [u16; 3],
    stack: u16,
    locals: u16,
    code: &[u8],
    handlers: &[[u16; 4]],
) {
    b.extend_from_slice(&flags.to_be_bytes());
    b.extend_from_slice(&name.to_be_bytes());
    b.extend_from_slice(&desc.to_be_bytes());
    b.extend_from_slice(&1u16.to_be_bytes());
    b.extend_from_slice(&code_name.to_be_bytes());
    let len = 2 + 2 + 4 + code.len() + 2 + 8 * handlers.len() + 2;
    b.extend_from_slice(&(len as u32).to_be_bytes());
    b.extend_from_slice(&stack.to_be_bytes());
    b.extend_from_slice(&locals.to_be_bytes());
    b.extend_from_slice(&(code.len() as u32).to_be_bytes());
    b.extend_from_slice(code);
    b.extend_from_slice(&(handlers.len() as u16).to_be_bytes());
    for h in handlers {
        for v in h {
            b.extend_from_slice(&v.to_be_bytes());
        }
    }
    b.extend_from_slice(&[0, 0]);
}

/// A class `C` with a static method `name desc` of the given code and exception table, and a
/// static `x()V` that returns. Constant 11 is `C.x()V`.
pub fn static_method(
    name: &str,
    desc: &str,
    max_locals: u16,
    code: &[u8],
    handlers: &[[u16; 4]],
) -> Vec<u8> {
    let mut b = vec![0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 49];
    let utf = |b: &mut Vec<u8>, s: &str| {
        b.push(1);
        b.extend_from_slice(&(s.len() as u16).to_be_bytes());
        b.extend_from_slice(s.as_bytes());
    };
    b.extend_from_slice(&12u16.to_be_bytes());
    utf(&mut b, "C"); // 1
    b.extend_from_slice(&[7, 0, 1]); // 2 Class C
    utf(&mut b, "java/lang/Object"); // 3
    b.extend_from_slice(&[7, 0, 3]); // 4 Class Object
    utf(&mut b, name); // 5
    utf(&mut b, desc); // 6
    utf(&mut b, "Code"); // 7
    utf(&mut b, "x"); // 8
    utf(&mut b, "()V"); // 9
    b.extend_from_slice(&[12, 0, 8, 0, 9]); // 10 NameAndType x ()V
    b.extend_from_slice(&[10, 0, 2, 0, 10]); // 11 Methodref C.x()V
    b.extend_from_slice(&[0, 0x21, 0, 2, 0, 4, 0, 0, 0, 0, 0, 2]);
    method(&mut b, 5, 6, 2, max_locals, code, handlers);
    method(&mut b, 8, 9, 0, 0, &[0xb1], &[]);
    b.extend_from_slice(&[0, 0]);
    b
}
