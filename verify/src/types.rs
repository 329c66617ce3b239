//! Verification types (JVMS §4.10.1.2) and subtyping through a [`ClassHierarchy`].

use crate::classfile::mutf8_to_string;
use crate::ClassHierarchy;
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

/// A class or array name: internal class name (`java/lang/String`) or array descriptor (`[I`, `[Ljava/lang/String;`).
#[derive(Clone)]
pub enum Name<'a> {
    B(&'a [u8]),
    O(Rc<[u8]>),
}

impl<'a> Name<'a> {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Name::B(b) => b,
            Name::O(o) => o,
        }
    }
    pub fn is_array(&self) -> bool {
        self.bytes().first() == Some(&b'[')
    }
}

impl PartialEq for Name<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.bytes() == o.bytes()
    }
}
impl Eq for Name<'_> {}

#[derive(Clone, PartialEq, Eq)]
pub enum VType<'a> {
    Top,
    Int,
    Float,
    Long,
    Double,
    Null,
    UninitThis,
    Uninit(u16),
    Ref(Name<'a>),
}

impl fmt::Display for VType<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VType::Top => f.write_str("top"),
            VType::Int => f.write_str("int"),
            VType::Float => f.write_str("float"),
            VType::Long => f.write_str("long"),
            VType::Double => f.write_str("double"),
            VType::Null => f.write_str("null"),
            VType::UninitThis => f.write_str("uninitializedThis"),
            VType::Uninit(o) => write!(f, "uninitialized({o})"),
            VType::Ref(n) => f.write_str(&mutf8_to_string(n.bytes()).replace('/', ".")),
        }
    }
}

impl<'a> VType<'a> {
    pub fn size(&self) -> usize {
        match self {
            VType::Long | VType::Double => 2,
            _ => 1,
        }
    }
    pub fn is_cat2(&self) -> bool {
        self.size() == 2
    }
    /// Reference in the JVMS sense: includes null and uninitialized types.
    pub fn is_reference_like(&self) -> bool {
        matches!(
            self,
            VType::Null | VType::UninitThis | VType::Uninit(_) | VType::Ref(_)
        )
    }
    /// Verification type of a field descriptor (`I`, `Ljava/lang/String;`, `[I`...).
    pub fn from_desc(d: &'a [u8]) -> VType<'a> {
        match d.first() {
            Some(b'B' | b'C' | b'I' | b'S' | b'Z') => VType::Int,
            Some(b'F') => VType::Float,
            Some(b'J') => VType::Long,
            Some(b'D') => VType::Double,
            Some(b'L') if d.len() >= 2 => VType::Ref(Name::B(&d[1..d.len() - 1])),
            Some(b'[') => VType::Ref(Name::B(d)),
            _ => VType::Top,
        }
    }
    /// Verification type of a CONSTANT_Class name (class name or array descriptor).
    pub fn from_class_name(n: &'a [u8]) -> VType<'a> {
        VType::Ref(Name::B(n))
    }
}

/// A small fast hasher for class-name keys (no HashDoS concern here).
#[derive(Default, Clone, Copy)]
pub struct FxBuild;
impl std::hash::BuildHasher for FxBuild {
    type Hasher = Fx;
    fn build_hasher(&self) -> Fx {
        Fx(0)
    }
}
pub struct Fx(u64);
impl std::hash::Hasher for Fx {
    fn write(&mut self, b: &[u8]) {
        for c in b.chunks(8) {
            let mut a = [0u8; 8];
            a[..c.len()].copy_from_slice(c);
            self.0 =
                (self.0.rotate_left(5) ^ u64::from_le_bytes(a)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.0 = (self.0.rotate_left(5) ^ i as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, i: usize) {
        self.0 = (self.0.rotate_left(5) ^ i as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
pub type FxMap<K, V> = HashMap<K, V, FxBuild>;

/// Local view of the hierarchy with caching and knowledge of the class being verified.
pub struct Hier<'h, 'a> {
    pub h: &'h dyn ClassHierarchy,
    pub this_class: &'a [u8],
    pub this_super: Option<&'a [u8]>,
    pub this_is_interface: bool,
    sup: RefCell<FxMap<Vec<u8>, Option<Vec<u8>>>>,
    iface: RefCell<FxMap<Vec<u8>, Option<bool>>>,
    /// The reference assignability checks (from, to) decided by assumption: a class on the
    /// way not found, taken as assignable ([`Hier::assumed`]).
    assumed: RefCell<std::collections::HashSet<(Vec<u8>, Vec<u8>), FxBuild>>,
}

const OBJECT: &[u8] = b"java/lang/Object";

/// Classes and interfaces of java.lang and java.io whose kind and superclass are the same in
/// every JDK (and that no class path can redefine: the `java.` packages are the boot loader's),
/// known without the JDK (`bci verify --no-jdk`): (name, superclass; None for an interface).
const PLATFORM: &[(&[u8], Option<&[u8]>)] = &[
    (b"java/lang/String", Some(OBJECT)),
    (b"java/lang/Class", Some(OBJECT)),
    (b"java/lang/Number", Some(OBJECT)),
    (b"java/lang/Integer", Some(b"java/lang/Number")),
    (b"java/lang/Long", Some(b"java/lang/Number")),
    (b"java/lang/Short", Some(b"java/lang/Number")),
    (b"java/lang/Byte", Some(b"java/lang/Number")),
    (b"java/lang/Float", Some(b"java/lang/Number")),
    (b"java/lang/Double", Some(b"java/lang/Number")),
    (b"java/lang/Boolean", Some(OBJECT)),
    (b"java/lang/Character", Some(OBJECT)),
    (b"java/lang/Void", Some(OBJECT)),
    (b"java/lang/Throwable", Some(OBJECT)),
    (b"java/lang/Exception", Some(b"java/lang/Throwable")),
    (b"java/lang/RuntimeException", Some(b"java/lang/Exception")),
    (b"java/lang/Error", Some(b"java/lang/Throwable")),
    (b"java/lang/Thread", Some(OBJECT)),
    (b"java/lang/System", Some(OBJECT)),
    (b"java/lang/Math", Some(OBJECT)),
    (b"java/lang/Enum", Some(OBJECT)),
    (b"java/lang/Cloneable", None),
    (b"java/lang/Comparable", None),
    (b"java/lang/CharSequence", None),
    (b"java/lang/Runnable", None),
    (b"java/lang/Iterable", None),
    (b"java/lang/AutoCloseable", None),
    (b"java/io/Serializable", None),
];

fn platform(c: &[u8]) -> Option<Option<&'static [u8]>> {
    PLATFORM.iter().find(|(n, _)| *n == c).map(|(_, s)| *s)
}

impl<'h, 'a> Hier<'h, 'a> {
    pub fn new(
        h: &'h dyn ClassHierarchy,
        this_class: &'a [u8],
        this_super: Option<&'a [u8]>,
        this_is_interface: bool,
    ) -> Self {
        Hier {
            h,
            this_class,
            this_super,
            this_is_interface,
            sup: Default::default(),
            iface: Default::default(),
            assumed: Default::default(),
        }
    }

    /// How many distinct reference assignability checks were decided by assumption (a class
    /// on the way not found on the class path: taken as assignable, as HotSpot would fail
    /// such a class with a link error, not a VerifyError, when the class is missing there
    /// too).
    pub fn assumed(&self) -> usize {
        self.assumed.borrow().len()
    }

    fn assume(&self, from: &[u8], to: &[u8]) -> bool {
        self.assumed
            .borrow_mut()
            .insert((from.to_vec(), to.to_vec()));
        true
    }

    pub fn super_of(&self, c: &[u8]) -> Option<Vec<u8>> {
        if c == self.this_class {
            return self.this_super.map(|s| s.to_vec());
        }
        if let Some(v) = self.sup.borrow().get(c) {
            return v.clone();
        }
        let v = self
            .h
            .super_class(&mutf8_to_string(c))
            .map(|s| s.into_bytes())
            .or_else(|| platform(c).flatten().map(<[u8]>::to_vec));
        self.sup.borrow_mut().insert(c.to_vec(), v.clone());
        v
    }

    pub fn is_interface(&self, c: &[u8]) -> Option<bool> {
        if c == self.this_class {
            return Some(self.this_is_interface);
        }
        if c == OBJECT {
            return Some(false);
        }
        if let Some(v) = self.iface.borrow().get(c) {
            return *v;
        }
        let v = self
            .h
            .is_interface(&mutf8_to_string(c))
            .or_else(|| platform(c).map(|s| s.is_none()));
        self.iface.borrow_mut().insert(c.to_vec(), v);
        v
    }

    /// Is class `from` a subclass of (or equal to) class `to`? Unknown links answer `None`.
    pub fn is_subclass(&self, from: &[u8], to: &[u8]) -> Option<bool> {
        let mut cur = from.to_vec();
        for _ in 0..256 {
            if cur == to {
                return Some(true);
            }
            if cur == OBJECT {
                return Some(false);
            }
            match self.super_of(&cur) {
                Some(s) => cur = s,
                None => return None,
            }
        }
        None
    }

    /// Lenient subclass: unknown classes count as assignable (HotSpot would fail with a link
    /// error, not a VerifyError), counted as assumed.
    fn subclass_lenient(&self, from: &[u8], to: &[u8]) -> bool {
        self.is_subclass(from, to)
            .unwrap_or_else(|| self.assume(from, to))
    }

    pub fn ref_assignable(&self, from: &[u8], to: &[u8]) -> bool {
        if from == to || to == OBJECT {
            return true;
        }
        if to.first() == Some(&b'[') {
            if from.first() != Some(&b'[') {
                return false;
            }
            let (ct, cf) = (&to[1..], &from[1..]);
            let prim = |c: &[u8]| !matches!(c.first(), Some(b'L' | b'['));
            if prim(ct) || prim(cf) {
                return ct == cf;
            }
            let strip = |c: &'_ [u8]| -> Vec<u8> {
                if c.first() == Some(&b'L') && c.len() >= 2 {
                    c[1..c.len() - 1].to_vec()
                } else {
                    c.to_vec()
                }
            };
            return self.ref_assignable(&strip(cf), &strip(ct));
        }
        match self.is_interface(to) {
            // an array is assignable to Object, Cloneable and Serializable only (all three
            // known), whether `to` is a class or an interface
            None if from.first() == Some(&b'[') => false,
            None => self.assume(from, to),
            Some(true) => {
                if from.first() == Some(&b'[') {
                    to == b"java/lang/Cloneable" || to == b"java/io/Serializable"
                } else {
                    true
                }
            }
            Some(false) => {
                if from.first() == Some(&b'[') {
                    false
                } else {
                    self.subclass_lenient(from, to)
                }
            }
        }
    }

    pub fn assignable(&self, from: &VType<'_>, to: &VType<'_>) -> bool {
        if from == to {
            return true;
        }
        match to {
            VType::Top => true,
            VType::Ref(t) => match from {
                VType::Null => true,
                VType::Ref(f) => self.ref_assignable(f.bytes(), t.bytes()),
                _ => false,
            },
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a class path (`--no-jdk` and nothing else), what can be decided is decided, and
    /// what is assumed is counted.
    #[test]
    fn unknown_classes_are_assumed_and_counted_known_ones_decided() {
        let h = Hier::new(&crate::NoHierarchy, b"T", Some(OBJECT), false);
        // java.lang's classes are known: Object is no String, an Integer is a Number
        assert!(!h.ref_assignable(OBJECT, b"java/lang/String"));
        assert!(h.ref_assignable(b"java/lang/Integer", b"java/lang/Number"));
        assert!(!h.ref_assignable(b"java/lang/Number", b"java/lang/Integer"));
        assert!(h.ref_assignable(b"java/lang/String", b"java/lang/CharSequence"));
        // an array is an Object, a Cloneable, a Serializable, and nothing else, whatever the
        // class or interface
        assert!(h.ref_assignable(b"[I", b"java/lang/Cloneable"));
        assert!(h.ref_assignable(b"[I", b"java/io/Serializable"));
        assert!(!h.ref_assignable(b"[I", b"a/Unknown"));
        assert!(!h.ref_assignable(b"[I", b"java/lang/String"));
        assert_eq!(h.assumed(), 0);
        // unknown: assumed, each pair once
        assert!(h.ref_assignable(b"a/X", b"a/Unknown"));
        assert!(h.ref_assignable(b"a/X", b"a/Unknown"));
        assert!(h.ref_assignable(OBJECT, b"a/Unknown"));
        assert!(h.ref_assignable(b"a/X", b"java/lang/Number"));
        assert_eq!(h.assumed(), 3);
    }
}
