//! Method ids: dense, assigned as the rewriter plans probes, kept for the reports.

use std::sync::Mutex;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodRec {
    /// Internal class name (`java/util/HashMap`).
    pub class: String,
    pub name: String,
    pub desc: String,
    pub source_file: Option<String>,
    pub first_line: Option<u32>,
}

impl MethodRec {
    pub fn dotted_class(&self) -> String {
        self.class.replace('/', ".")
    }
}

/// (class, name, descriptor) of a method registered by reference.
type MethodKey = (String, String, String);

/// The global table: index = method id.
pub struct Registry {
    methods: Mutex<Vec<MethodRec>>,
    /// The first id of each class instrumented offline, by name and hash of its original
    /// bytes ([`Registry::register_offline`]).
    offline: Mutex<Option<std::collections::HashMap<(String, u64), u32>>>,
    /// Methods registered by reference (class, name, desc): the targets of intrinsic call
    /// sites ([`Registry::register_ref`]).
    refs: Mutex<Option<std::collections::HashMap<MethodKey, u32>>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    pub const fn new() -> Registry {
        Registry {
            methods: Mutex::new(Vec::new()),
            offline: Mutex::new(None),
            refs: Mutex::new(None),
        }
    }

    pub fn register(&self, m: MethodRec) -> u32 {
        let mut v = self.methods.lock().unwrap_or_else(|p| p.into_inner());
        v.push(m);
        (v.len() - 1) as u32
    }

    /// Registers `ms` under consecutive ids (one lock: no other registration in between);
    /// returns the first.
    pub fn register_all(&self, ms: Vec<MethodRec>) -> u32 {
        let mut v = self.methods.lock().unwrap_or_else(|p| p.into_inner());
        let base = v.len() as u32;
        v.extend(ms);
        base
    }

    /// A method known by reference only (a call site's target, counted there: the rewriter's
    /// intrinsic sites), before or without its class being rewritten: one id per (class,
    /// name, desc), made the first time, with no source file or line.
    pub fn register_ref(&self, class: &str, name: &str, desc: &str) -> u32 {
        let mut refs = self.refs.lock().unwrap_or_else(|p| p.into_inner());
        let map = refs.get_or_insert_with(Default::default);
        let key = (class.to_string(), name.to_string(), desc.to_string());
        if let Some(&id) = map.get(&key) {
            return id;
        }
        let id = self.register(MethodRec {
            class: key.0.clone(),
            name: key.1.clone(),
            desc: key.2.clone(),
            source_file: None,
            first_line: None,
        });
        map.insert(key, id);
        id
    }

    /// A class instrumented by `bci instrument` registers its methods (`ms`, from its `<clinit>`
    /// or, when its code runs before that, from its `bci$r`): the first id of consecutive ones,
    /// the same for the same class name and hash as before. Never 0: the class keeps its base
    /// in `bci$base`, whose 0 means "not registered yet" to its `bci$r`, which then registers
    /// again at every call (an offline class registering before any other method: tracing
    /// rules alone, or `cpu=times` with `include=` matching none of the JDK's classes). Id 0
    /// is then a placeholder no probe passes.
    pub fn register_offline(&self, class: &str, hash: u64, ms: Vec<MethodRec>) -> u32 {
        let mut known = self.offline.lock().unwrap_or_else(|p| p.into_inner());
        let map = known.get_or_insert_with(Default::default);
        if let Some(&base) = map.get(&(class.to_string(), hash)) {
            return base;
        }
        if self.is_empty() {
            self.register(MethodRec {
                class: "bci/runtime/Offline".into(),
                name: "(id 0: no class's base)".into(),
                desc: "()V".into(),
                source_file: None,
                first_line: None,
            });
        }
        let base = self.register_all(ms);
        map.insert((class.to_string(), hash), base);
        base
    }

    /// The id last registered for method `name``desc` of class `class`: a redefined class's
    /// methods keep their ids (one row per method in the report). A linear search: only
    /// redefinitions, which are rare, ask.
    pub fn find(&self, class: &str, name: &str, desc: &str) -> Option<u32> {
        let v = self.methods.lock().unwrap_or_else(|p| p.into_inner());
        v.iter()
            .rposition(|m| m.class == class && m.name == name && m.desc == desc)
            .map(|k| k as u32)
    }

    pub fn snapshot(&self) -> Vec<MethodRec> {
        self.methods
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn len(&self) -> usize {
        self.methods.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_ids() {
        let r = Registry::new();
        let m = |n: &str| MethodRec {
            class: "a/B".into(),
            name: n.into(),
            desc: "()V".into(),
            source_file: None,
            first_line: None,
        };
        assert_eq!(r.register(m("x")), 0);
        assert_eq!(r.register(m("y")), 1);
        assert_eq!(r.snapshot()[1].name, "y");
        assert_eq!(r.snapshot()[0].dotted_class(), "a.B");
        assert_eq!(r.register_all(vec![m("p"), m("q")]), 2);
        assert_eq!(r.register(m("z")), 4);
        assert_eq!(r.find("a/B", "y", "()V"), Some(1));
        assert_eq!(r.find("a/B", "y", "(I)V"), None);
        assert_eq!(r.find("a/C", "y", "()V"), None);
        assert_eq!(r.snapshot()[3].name, "q");
        // a class instrumented offline registers once per name and hash
        assert_eq!(r.register_offline("a/B", 7, vec![m("s"), m("t")]), 5);
        assert_eq!(r.register_offline("a/B", 7, vec![m("s"), m("t")]), 5);
        assert_eq!(r.register_offline("a/B", 8, vec![m("s")]), 7);
        assert_eq!(r.len(), 8);
        // by reference: one id per method, made once
        assert_eq!(r.register_ref("java/lang/Math", "abs", "(I)I"), 8);
        assert_eq!(r.register(m("u")), 9);
        assert_eq!(r.register_ref("java/lang/Math", "abs", "(I)I"), 8);
        assert_eq!(r.register_ref("java/lang/Math", "abs", "(J)J"), 10);
        assert_eq!(r.snapshot()[8].dotted_class(), "java.lang.Math");
        assert_eq!(r.snapshot()[8].source_file, None);
    }

    #[test]
    fn an_offline_class_never_gets_base_0() {
        let r = Registry::new();
        let m = |n: &str| MethodRec {
            class: "a/B".into(),
            name: n.into(),
            desc: "()V".into(),
            source_file: None,
            first_line: None,
        };
        assert_eq!(r.register_offline("a/B", 7, vec![m("s"), m("t")]), 1);
        assert_eq!(r.register_offline("a/B", 7, vec![m("s"), m("t")]), 1);
        assert_eq!(r.snapshot()[1].name, "s");
        assert_eq!(r.register(m("x")), 3);
    }
}

/// The methods of an offline-instrumented class from the table its `<clinit>` passes to
/// `bci/runtime/Offline.register`: `source\n` then `name\ndesc\nline\n` per method.
pub fn offline_methods(class: &str, table: &str) -> Vec<MethodRec> {
    let mut parts = table.split('\n');
    let source = parts.next().filter(|s| !s.is_empty()).map(str::to_string);
    let mut out = Vec::new();
    while let (Some(name), Some(desc), Some(line)) = (parts.next(), parts.next(), parts.next()) {
        out.push(MethodRec {
            class: class.to_string(),
            name: name.to_string(),
            desc: desc.to_string(),
            source_file: source.clone(),
            first_line: line.parse().ok(),
        });
    }
    out
}

#[cfg(test)]
mod offline_tests {
    #[test]
    fn offline_table() {
        let v = super::offline_methods("a/B", "B.java\nm\n()V\n3\n<init>\n(I)V\n\n");
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].name, "m");
        assert_eq!(v[0].first_line, Some(3));
        assert_eq!(v[1].desc, "(I)V");
        assert_eq!(v[1].first_line, None);
        assert_eq!(v[1].source_file.as_deref(), Some("B.java"));
        assert!(super::offline_methods("a/B", "").is_empty());
    }
}
