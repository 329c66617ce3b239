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

/// The global table: index = method id.
pub struct Registry {
    methods: Mutex<Vec<MethodRec>>,
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
        }
    }

    pub fn register(&self, m: MethodRec) -> u32 {
        let mut v = self.methods.lock().unwrap_or_else(|p| p.into_inner());
        v.push(m);
        (v.len() - 1) as u32
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
    }
}
