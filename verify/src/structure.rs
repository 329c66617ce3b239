//! Class-, field- and method-level attribute checks that HotSpot's class-file parser makes
//! (lengths, constant-pool kinds, duplicates, bootstrap method indices). Version-gated like HotSpot,
//! which ignores attributes a class-file version does not define.

use crate::classfile::{mutf8_to_string, Attribute, ClassFile, Cp, Reader, Res, ACC_STATIC};

fn err<T>(m: String) -> Res<T> {
    Err(crate::classfile::FormatError(m))
}

fn u2_list(a: &Attribute<'_>, what: &str, mut ok: impl FnMut(u16) -> bool) -> Res<()> {
    let mut r = Reader::within(a.data, "attribute");
    let n = r.u2()? as usize;
    if a.data.len() != 2 + 2 * n {
        return err(format!("wrong {what} attribute length"));
    }
    for _ in 0..n {
        let i = r.u2()?;
        if !ok(i) {
            return err(format!("bad constant pool index {i} in {what} attribute"));
        }
    }
    Ok(())
}

fn single_index(a: &Attribute<'_>, what: &str, ok: impl Fn(u16) -> bool) -> Res<()> {
    if a.data.len() != 2 {
        return err(format!("wrong {what} attribute length {}", a.data.len()));
    }
    let i = u16::from_be_bytes([a.data[0], a.data[1]]);
    if !ok(i) {
        return err(format!("bad constant pool index {i} in {what} attribute"));
    }
    Ok(())
}

fn illegal_visibility(f: u16) -> bool {
    (f & 0x0001 != 0) as u8 + (f & 0x0002 != 0) as u8 + (f & 0x0004 != 0) as u8 > 1
}

/// Legal access flags of the class, fields and methods (HotSpot `verify_legal_*_modifiers`).
pub fn check_modifiers(cf: &ClassFile<'_>) -> Res<()> {
    let major = cf.major;
    let f = cf.access;
    let is_interface = f & 0x0200 != 0;
    if f & 0x8000 == 0 {
        // before version 50 HotSpot sets ACC_ABSTRACT on interfaces itself
        let abs = f & 0x0400 != 0 || (is_interface && major < 50);
        let (fin, sup, en, ann) = (
            f & 0x0010 != 0,
            f & 0x0020 != 0,
            f & 0x4000 != 0,
            f & 0x2000 != 0,
        );
        let ge15 = major >= 49;
        if (abs && fin)
            || (is_interface && !abs)
            || (is_interface && ge15 && (sup || en))
            || (!is_interface && ge15 && ann)
        {
            return err(format!("illegal class modifiers 0x{f:04X}"));
        }
        if is_interface && cf.super_class != Some(b"java/lang/Object") {
            return err("interfaces must have java.lang.Object as superclass".into());
        }
    }
    for fd in &cf.fields {
        let a = fd.access;
        let (public, private, protected, stat, fin, vol, trans, en) = (
            a & 0x0001 != 0,
            a & 0x0002 != 0,
            a & 0x0004 != 0,
            a & 0x0008 != 0,
            a & 0x0010 != 0,
            a & 0x0040 != 0,
            a & 0x0080 != 0,
            a & 0x4000 != 0,
        );
        let illegal = if is_interface {
            !public || !stat || !fin || private || protected || vol || trans || (major >= 49 && en)
        } else {
            illegal_visibility(a) || (fin && vol)
        };
        if illegal {
            return err(format!(
                "illegal field modifiers 0x{a:04X} on {}",
                mutf8_to_string(fd.name)
            ));
        }
    }
    for m in &cf.methods {
        let a = m.access;
        let name = m.name;
        if name == b"<clinit>" {
            if major >= 51 && a & 0x0008 == 0 {
                return err("method <clinit> is not static".into());
            }
            continue;
        }
        let (public, private, protected, stat, fin, sync, bridge, native, abs, strict) = (
            a & 0x0001 != 0,
            a & 0x0002 != 0,
            a & 0x0004 != 0,
            a & 0x0008 != 0,
            a & 0x0010 != 0,
            a & 0x0020 != 0,
            a & 0x0040 != 0,
            a & 0x0100 != 0,
            a & 0x0400 != 0,
            a & 0x0800 != 0,
        );
        let is_init = name == b"<init>";
        if is_init && !m.desc.ends_with(b")V") {
            return err("method <init> has illegal signature".into());
        }
        if is_interface && is_init {
            return err("interface cannot have a method named <init>".into());
        }
        if !is_init && name.first() == Some(&b'<') {
            return err(format!("illegal method name {}", mutf8_to_string(name)));
        }
        let illegal = if is_interface {
            if major >= 52 {
                (public == private)
                    || native
                    || protected
                    || fin
                    || sync
                    || (abs && (private || stat || (major < 61 && strict)))
            } else if major >= 49 {
                !public || private || protected || stat || fin || sync || native || !abs || strict
            } else {
                !public || stat || fin || native || !abs
            }
        } else if illegal_visibility(a) {
            true
        } else if is_init {
            stat || fin || sync || native || abs || (major >= 49 && bridge)
        } else {
            abs && (fin
                || native
                || private
                || stat
                || (major >= 49 && (sync || (major < 61 && strict))))
        };
        if illegal {
            return err(format!(
                "illegal method modifiers 0x{a:04X} on {}{}",
                mutf8_to_string(name),
                mutf8_to_string(m.desc)
            ));
        }
    }
    Ok(())
}

/// Every Class constant names a legal class (HotSpot `verify_legal_class_name`, version 49 and
/// later, for every class it verifies: ClassFormatError "Illegal class name" when the class
/// loads, whether or not the name is used): an array descriptor, or `/`-separated names, none
/// empty, none holding `.`, `;` or `[`. (Before version 49 HotSpot's rule is stricter, Java
/// identifiers; this one, more lenient, never refuses what it accepts.)
pub fn check_class_names(cf: &ClassFile<'_>) -> Res<()> {
    for (i, e) in cf.cp.entries.iter().enumerate() {
        let Cp::Class(n) = e else { continue };
        let name = cf.cp.utf8(*n)?;
        let legal = if name.first() == Some(&b'[') {
            crate::classfile::valid_field_desc(name)
        } else {
            !name.is_empty()
                && name
                    .split(|&b| b == b'/')
                    .all(|p| !p.is_empty() && !p.iter().any(|b| matches!(b, b'.' | b';' | b'[')))
        };
        if !legal {
            return err(format!(
                "illegal class name \"{}\" (constant pool #{i})",
                mutf8_to_string(name)
            ));
        }
    }
    Ok(())
}

/// Check the attributes of the class, its fields and methods (not the contents of Code).
pub fn check(cf: &ClassFile<'_>) -> Res<()> {
    check_modifiers(cf)?;
    check_class_names(cf)?;
    let cp = &cf.cp;
    let major = cf.major;
    let is_utf8 = |i: u16| matches!(cp.get(i), Some(Cp::Utf8(_)));
    let is_class = |i: u16| matches!(cp.get(i), Some(Cp::Class(_)));
    // class attributes
    let mut seen: Vec<&[u8]> = Vec::new();
    let mut bootstrap_count: Option<usize> = None;
    for a in &cf.attributes {
        let unique: &[&[u8]] = &[
            b"SourceFile",
            b"InnerClasses",
            b"EnclosingMethod",
            b"Signature",
            b"BootstrapMethods",
            b"NestHost",
            b"NestMembers",
            b"PermittedSubclasses",
            b"Record",
            b"SourceDebugExtension",
        ];
        let defined = match a.name {
            b"Signature" | b"EnclosingMethod" => major >= 49,
            b"BootstrapMethods" => major >= 51,
            b"NestHost" | b"NestMembers" => major >= 55,
            b"Record" => major >= 60,
            b"PermittedSubclasses" => major >= 61,
            _ => true,
        };
        if !defined {
            continue;
        }
        if unique.contains(&a.name) {
            if seen.contains(&a.name) {
                return err(format!("multiple {} attributes", mutf8_to_string(a.name)));
            }
            seen.push(a.name);
        }
        match a.name {
            b"SourceFile" => single_index(a, "SourceFile", is_utf8)?,
            b"Signature" => single_index(a, "Signature", is_utf8)?,
            b"NestHost" => single_index(a, "NestHost", is_class)?,
            b"NestMembers" => u2_list(a, "NestMembers", is_class)?,
            b"PermittedSubclasses" => u2_list(a, "PermittedSubclasses", is_class)?,
            b"EnclosingMethod" => {
                if a.data.len() != 4 {
                    return err("wrong EnclosingMethod attribute length".into());
                }
                let c = u16::from_be_bytes([a.data[0], a.data[1]]);
                let m = u16::from_be_bytes([a.data[2], a.data[3]]);
                if !is_class(c) || (m != 0 && !matches!(cp.get(m), Some(Cp::NameAndType(..)))) {
                    return err("invalid EnclosingMethod attribute".into());
                }
            }
            b"InnerClasses" => {
                let mut r = Reader::within(a.data, "InnerClasses attribute");
                let n = r.u2()? as usize;
                if a.data.len() != 2 + 8 * n {
                    return err("wrong InnerClasses attribute length".into());
                }
                for _ in 0..n {
                    let (inner, outer, name) = (r.u2()?, r.u2()?, r.u2()?);
                    r.u2()?;
                    if !is_class(inner)
                        || (outer != 0 && !is_class(outer))
                        || (name != 0 && !is_utf8(name))
                    {
                        return err("invalid InnerClasses attribute entry".into());
                    }
                    if inner == outer {
                        return err("class is both outer and inner class".into());
                    }
                    if outer != 0 && cp.class_name(outer)?.first() == Some(&b'[') {
                        return err("outer class is an array class".into());
                    }
                }
            }
            b"BootstrapMethods" => {
                let mut r = Reader::within(a.data, "BootstrapMethods attribute");
                let n = r.u2()? as usize;
                for _ in 0..n {
                    let mh = r.u2()?;
                    if !matches!(cp.get(mh), Some(Cp::MethodHandle(..))) {
                        return err(format!("bootstrap method #{mh} is not a MethodHandle"));
                    }
                    let k = r.u2()?;
                    for _ in 0..k {
                        let arg = r.u2()?;
                        let loadable = matches!(
                            cp.get(arg),
                            Some(
                                Cp::Integer
                                    | Cp::Float
                                    | Cp::Long
                                    | Cp::Double
                                    | Cp::Class(_)
                                    | Cp::String(_)
                                    | Cp::MethodHandle(..)
                                    | Cp::MethodType(_)
                                    | Cp::Dynamic(..)
                            )
                        );
                        if !loadable {
                            return err(format!(
                                "bootstrap method argument #{arg} is not loadable"
                            ));
                        }
                    }
                }
                if r.remaining() != 0 {
                    return err("BootstrapMethods attribute length mismatch".into());
                }
                bootstrap_count = Some(n);
            }
            _ => {}
        }
    }
    // every invokedynamic / dynamic constant names an existing bootstrap method
    for (i, e) in cp.entries.iter().enumerate() {
        if let Cp::InvokeDynamic(b, _) | Cp::Dynamic(b, _) = e {
            match bootstrap_count {
                Some(n) if (*b as usize) < n => {}
                _ => {
                    return err(format!(
                    "constant pool #{i}: bootstrap method index {b} without BootstrapMethods entry"
                ))
                }
            }
        }
    }
    // fields
    for f in &cf.fields {
        let mut seen_cv = false;
        let mut seen_sig = false;
        for a in &f.attributes {
            match a.name {
                b"ConstantValue" if f.access & ACC_STATIC != 0 => {
                    if seen_cv {
                        return err(format!(
                            "multiple ConstantValue attributes on field {}",
                            mutf8_to_string(f.name)
                        ));
                    }
                    seen_cv = true;
                    single_index(a, "ConstantValue", |i| match (cp.get(i), f.desc.first()) {
                        (Some(Cp::Long), Some(b'J'))
                        | (Some(Cp::Float), Some(b'F'))
                        | (Some(Cp::Double), Some(b'D')) => true,
                        (Some(Cp::Integer), Some(b'I' | b'S' | b'C' | b'B' | b'Z')) => true,
                        (Some(Cp::String(_)), _) => f.desc == b"Ljava/lang/String;",
                        _ => false,
                    })?;
                }
                b"Signature" if major >= 49 => {
                    if seen_sig {
                        return err("multiple Signature attributes on a field".into());
                    }
                    seen_sig = true;
                    single_index(a, "Signature", is_utf8)?;
                }
                b"Synthetic" | b"Deprecated" if !a.data.is_empty() => {
                    return err(format!(
                        "invalid {} attribute length",
                        mutf8_to_string(a.name)
                    ));
                }
                _ => {}
            }
        }
    }
    // methods (Code is checked by the caller)
    for m in &cf.methods {
        let mut seen_ex = false;
        let mut seen_sig = false;
        for a in &m.attributes {
            match a.name {
                b"Exceptions" => {
                    if seen_ex {
                        return err("multiple Exceptions attributes".into());
                    }
                    seen_ex = true;
                    u2_list(a, "Exceptions", is_class)?;
                }
                b"Signature" if major >= 49 => {
                    if seen_sig {
                        return err("multiple Signature attributes on a method".into());
                    }
                    seen_sig = true;
                    single_index(a, "Signature", is_utf8)?;
                }
                b"Synthetic" | b"Deprecated" if !a.data.is_empty() => {
                    return err(format!(
                        "invalid {} attribute length",
                        mutf8_to_string(a.name)
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}
