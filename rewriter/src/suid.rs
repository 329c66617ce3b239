//! The default `serialVersionUID` of a class, as `java.io.ObjectStreamClass` computes it when
//! the class declares none (Java Object Serialization Specification 4.6). Offline
//! instrumentation with runtime ids may add a `<clinit>` or a non-private field, which changes
//! that value; the rewriter then declares the original one, so instrumented and original classes
//! still deserialize each other's objects.

use bci::class::{
    ACC_ABSTRACT, ACC_FINAL, ACC_INTERFACE, ACC_PRIVATE, ACC_PROTECTED, ACC_PUBLIC, ACC_STATIC,
};
use bci::ClassFile;

const ACC_SYNCHRONIZED: u16 = 0x0020;
const ACC_VOLATILE: u16 = 0x0040;
const ACC_TRANSIENT: u16 = 0x0080;
const ACC_NATIVE: u16 = 0x0100;
const ACC_STRICT: u16 = 0x0800;

/// SHA-1 (FIPS 180-4) of `data`.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [
        0x6745_2301,
        0xEFCD_AB89,
        0x98BA_DCFE,
        0x1032_5476,
        0xC3D2_E1F0,
    ];
    let mut msg = data.to_vec();
    let bits = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bits.to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 80];
        for (i, c) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    }
    let mut out = [0u8; 20];
    for (i, x) in h.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&x.to_be_bytes());
    }
    out
}

/// DataOutputStream.writeUTF: u16 length, modified UTF-8.
fn write_utf(out: &mut Vec<u8>, s: &str) -> bci::Result<()> {
    let b = bci::cp::encode_mutf8(s);
    let n = u16::try_from(b.len())
        .map_err(|_| bci::Error::new(bci::ErrorKind::TooLarge, "name longer than 65535 bytes"))?;
    out.extend_from_slice(&n.to_be_bytes());
    out.extend_from_slice(&b);
    Ok(())
}

/// The class's modifiers as `Class.getModifiers` reports them: its own InnerClasses entry's
/// flags for a nested class, else access_flags.
fn class_modifiers(cf: &ClassFile<'_>) -> u16 {
    let own = cf
        .find_attr(&cf.attributes, "InnerClasses")
        .and_then(|(_, a)| {
            let d = a.data;
            let n = u16::from_be_bytes([*d.first()?, *d.get(1)?]) as usize;
            (0..n).find_map(|k| {
                let e = d.get(2 + 8 * k..10 + 8 * k)?;
                let inner = u16::from_be_bytes([e[0], e[1]]);
                (inner == cf.this_class).then(|| u16::from_be_bytes([e[6], e[7]]))
            })
        });
    own.unwrap_or(cf.access)
}

/// Whether the class declares a field named `serialVersionUID`.
pub fn declares_suid(cf: &ClassFile<'_>) -> bool {
    cf.fields.iter().any(|f| {
        cf.cp
            .utf8_bytes(f.name_index)
            .is_ok_and(|n| n == b"serialVersionUID")
    })
}

/// Whether objects of the class could be serialized with a default serialVersionUID, as far as
/// the class file alone tells: not when it extends java.lang.Object and implements no
/// interface (nothing makes it Serializable), nor for an enum or a record (serialization
/// ignores their serialVersionUID: always 0L for enums, matching waived for records; Java
/// Object Serialization Specification 1.12, 1.13, 4.6). Anything else may be (a superclass
/// or interface may be Serializable).
pub fn may_serialize(cf: &ClassFile<'_>) -> bool {
    let sup = cf.super_name().ok().flatten();
    let sup = sup.as_deref();
    if cf.interfaces.is_empty() && (sup == Some("java/lang/Object") || sup.is_none()) {
        return false;
    }
    !matches!(sup, Some("java/lang/Enum" | "java/lang/Record"))
}

/// `String.compareTo`: by UTF-16 code units, the order `ObjectStreamClass` sorts names in. It
/// differs from the order of `str` (code points, as UTF-8 or modified UTF-8 bytes) where a
/// character above U+FFFF (a surrogate pair, 0xD800..0xDFFF) meets one of U+E000..U+FFFF: the
/// JDK puts the pair first.
fn java_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// `ObjectStreamClass.computeDefaultSUID` of the class as parsed.
pub fn default_suid(cf: &ClassFile<'_>) -> bci::Result<i64> {
    let mut d = Vec::new();
    write_utf(&mut d, &cf.name()?.replace('/', "."))?;
    let is_method = |m: &bci::Member<'_>| {
        let n = cf.member_name(m);
        n != "<init>" && n != "<clinit>"
    };
    let mut mods = class_modifiers(cf) & (ACC_PUBLIC | ACC_FINAL | ACC_INTERFACE | ACC_ABSTRACT);
    if mods & ACC_INTERFACE != 0 {
        if cf.methods.iter().any(is_method) {
            mods |= ACC_ABSTRACT;
        } else {
            mods &= !ACC_ABSTRACT;
        }
    }
    d.extend_from_slice(&(mods as u32).to_be_bytes());
    let mut ifaces = cf
        .interfaces
        .iter()
        .map(|&i| cf.cp.class_name(i).map(|n| n.replace('/', ".")))
        .collect::<bci::Result<Vec<_>>>()?;
    ifaces.sort_by(|a, b| java_order(a, b));
    for i in &ifaces {
        write_utf(&mut d, i)?;
    }
    // fields by name (a stable sort: declaration order among equal names)
    let mut fields: Vec<_> = cf.fields.iter().collect();
    fields.sort_by(|a, b| java_order(&cf.member_name(a), &cf.member_name(b)));
    let fmask = ACC_PUBLIC
        | ACC_PRIVATE
        | ACC_PROTECTED
        | ACC_STATIC
        | ACC_FINAL
        | ACC_VOLATILE
        | ACC_TRANSIENT;
    for f in fields {
        let m = f.access & fmask;
        if m & ACC_PRIVATE == 0 || m & (ACC_STATIC | ACC_TRANSIENT) == 0 {
            write_utf(&mut d, &cf.member_name(f))?;
            d.extend_from_slice(&(m as u32).to_be_bytes());
            write_utf(&mut d, &cf.member_desc(f))?;
        }
    }
    let has_clinit = cf.method("<clinit>", Some("()V")).is_some();
    if has_clinit {
        write_utf(&mut d, "<clinit>")?;
        d.extend_from_slice(&(ACC_STATIC as u32).to_be_bytes());
        write_utf(&mut d, "()V")?;
    }
    let mmask = ACC_PUBLIC
        | ACC_PRIVATE
        | ACC_PROTECTED
        | ACC_STATIC
        | ACC_FINAL
        | ACC_SYNCHRONIZED
        | ACC_NATIVE
        | ACC_ABSTRACT
        | ACC_STRICT;
    let mut ctors: Vec<_> = cf
        .methods
        .iter()
        .filter(|m| cf.member_name(m) == "<init>")
        .collect();
    ctors.sort_by(|a, b| java_order(&cf.member_desc(a), &cf.member_desc(b)));
    for c in ctors {
        let m = c.access & mmask;
        if m & ACC_PRIVATE == 0 {
            write_utf(&mut d, "<init>")?;
            d.extend_from_slice(&(m as u32).to_be_bytes());
            write_utf(&mut d, &cf.member_desc(c).replace('/', "."))?;
        }
    }
    let mut methods: Vec<_> = cf.methods.iter().filter(|m| is_method(m)).collect();
    methods.sort_by(|a, b| {
        java_order(&cf.member_name(a), &cf.member_name(b))
            .then_with(|| java_order(&cf.member_desc(a), &cf.member_desc(b)))
    });
    for me in methods {
        let m = me.access & mmask;
        if m & ACC_PRIVATE == 0 {
            write_utf(&mut d, &cf.member_name(me))?;
            d.extend_from_slice(&(m as u32).to_be_bytes());
            write_utf(&mut d, &cf.member_desc(me).replace('/', "."))?;
        }
    }
    let h = sha1(&d);
    let mut v: i64 = 0;
    for i in (0..8).rev() {
        v = (v << 8) | h[i] as i64;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn sha1_vectors() {
        assert_eq!(hex(&sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(
            hex(&sha1(b"abc")),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(
            hex(&sha1(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        assert_eq!(
            hex(&sha1(&vec![b'a'; 1_000_000])),
            "34aa973cd4c4daa4f61eeb2bdbad27316534016f"
        );
    }
}
