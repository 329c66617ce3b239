//! The coverage data file (`bci.cov`): versioned, binary, big-endian.
//!
//! ```text
//! magic    "BCICOV\0\n"                      8 bytes
//! version  u16 = 1 or 2
//! sessions u32, then per session:
//!   id str, start_ms i64, dump_ms i64, jvm str, command str
//! classes  u32, then per class (sorted by name, then hash):
//!   name str (internal form), hash u64, counters u32, counts u64 × counters
//! version 2 only, per-test coverage:
//! tests    u32, then per test (sorted by name):
//!   name str, classes u32, then per class as above (the counts while the test ran; a
//!   record named OVERLAP_CLASS, hash 0, one counter: the times the test overlapped another)
//! str = u32 byte length + UTF-8
//! ```
//!
//! Data without per-test counts is written as version 1, which every reader reads.
//!
//! A class is keyed by its name and the 64-bit hash of its original bytes
//! ([`super::class_hash`]); counts of the same key add up (saturating), the same name with
//! another hash is stale data from another build and is refused unless asked to skip it.

use std::collections::BTreeMap;
use std::fmt;

pub const MAGIC: &[u8; 8] = b"BCICOV\0\n";
/// The name of a test's class record that counts, in its one counter (hash 0), the times the
/// test's window overlapped another test's (tests run in parallel): not a class (`;` is in no
/// class name), left out of every class's counts.
pub const OVERLAP_CLASS: &str = ";overlapped";
/// The newest version written (only when there are per-test counts; else 1).
pub const VERSION: u16 = 2;

/// One JVM run (or dump) that contributed to the data.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Session {
    pub id: String,
    pub start_ms: i64,
    pub dump_ms: i64,
    pub jvm: String,
    pub command: String,
}

/// Coverage data: sessions and per-class counter values.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct CovData {
    pub sessions: Vec<Session>,
    /// (internal class name, hash) -> counter values.
    pub classes: BTreeMap<(String, u64), Vec<u64>>,
    /// Per test (its name, e.g. `a.BTest#one()`): the counts while it ran, keyed like
    /// `classes` (`bci.runtime.Cov.begin/end`; version 2).
    pub tests: BTreeMap<String, BTreeMap<(String, u64), Vec<u64>>>,
}

/// Adds counts of one class into a map of classes (saturating); another number of counters
/// under the same key is malformed data.
fn add_into(
    map: &mut BTreeMap<(String, u64), Vec<u64>>,
    name: &str,
    hash: u64,
    counts: &[u64],
) -> Result<(), DataError> {
    let e = map
        .entry((name.to_string(), hash))
        .or_insert_with(|| vec![0; counts.len()]);
    if e.len() != counts.len() {
        return Err(DataError(format!(
            "class {name} (hash {hash:016x}): {} counters here, {} before",
            counts.len(),
            e.len()
        )));
    }
    for (a, b) in e.iter_mut().zip(counts) {
        *a = a.saturating_add(*b);
    }
    Ok(())
}

/// Reads `n` classes (name, hash, counts) into `into`.
fn read_classes(
    r: &mut Rd<'_>,
    n: u32,
    into: &mut BTreeMap<(String, u64), Vec<u64>>,
) -> Result<(), DataError> {
    for _ in 0..n {
        let at = r.at;
        let name = r.str("class name")?;
        let hash = r.u64("class hash")?;
        let n = r.u32("counter count")? as usize;
        if n > (r.b.len() - r.at) / 8 {
            return Err(DataError(format!(
                "offset {at}: class {name}: {n} counters run past the end"
            )));
        }
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(r.u64("counter")?);
        }
        add_into(into, &name, hash, &v).map_err(|e| DataError(format!("offset {at}: {e}")))?;
    }
    Ok(())
}

fn put_classes(out: &mut Vec<u8>, classes: &BTreeMap<(String, u64), Vec<u64>>) {
    out.extend_from_slice(&(classes.len() as u32).to_be_bytes());
    for ((name, hash), v) in classes {
        put_str(out, name);
        out.extend_from_slice(&hash.to_be_bytes());
        out.extend_from_slice(&(v.len() as u32).to_be_bytes());
        for c in v {
            out.extend_from_slice(&c.to_be_bytes());
        }
    }
}

/// A malformed file or a merge conflict; says where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataError(pub String);

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DataError {}

struct Rd<'a> {
    b: &'a [u8],
    at: usize,
}

impl Rd<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], DataError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| DataError(format!("offset {}: truncated {what}", self.at)))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u16(&mut self, what: &str) -> Result<u16, DataError> {
        let s = self.take(2, what)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }
    fn u32(&mut self, what: &str) -> Result<u32, DataError> {
        let s = self.take(4, what)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self, what: &str) -> Result<u64, DataError> {
        let s = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_be_bytes(a))
    }
    fn str(&mut self, what: &str) -> Result<String, DataError> {
        let at = self.at;
        let n = self.u32(what)? as usize;
        let s = self.take(n, what)?;
        String::from_utf8(s.to_vec())
            .map_err(|_| DataError(format!("offset {at}: {what} is not UTF-8")))
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

impl CovData {
    /// Parses a data file.
    pub fn parse(bytes: &[u8]) -> Result<CovData, DataError> {
        let mut r = Rd { b: bytes, at: 0 };
        if r.take(8, "magic")? != MAGIC {
            return Err(DataError("not a bci coverage file (bad magic)".into()));
        }
        let v = r.u16("version")?;
        if v == 0 || v > VERSION {
            return Err(DataError(format!(
                "coverage file version {v}; this bci reads versions 1 to {VERSION}"
            )));
        }
        let mut d = CovData::default();
        let ns = r.u32("session count")?;
        for _ in 0..ns {
            d.sessions.push(Session {
                id: r.str("session id")?,
                start_ms: r.u64("start time")? as i64,
                dump_ms: r.u64("dump time")? as i64,
                jvm: r.str("jvm")?,
                command: r.str("command line")?,
            });
        }
        let nc = r.u32("class count")?;
        read_classes(&mut r, nc, &mut d.classes)?;
        if v >= 2 {
            let nt = r.u32("test count")?;
            for _ in 0..nt {
                let name = r.str("test name")?;
                let nc = r.u32("test class count")?;
                read_classes(&mut r, nc, d.tests.entry(name).or_default())?;
            }
        }
        if r.at != bytes.len() {
            return Err(DataError(format!(
                "offset {}: {} bytes after the last class",
                r.at,
                bytes.len() - r.at
            )));
        }
        Ok(d)
    }

    /// Encodes the data (classes sorted by name and hash): version 1 without per-test counts,
    /// else 2.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        let v: u16 = if self.tests.is_empty() { 1 } else { 2 };
        out.extend_from_slice(&v.to_be_bytes());
        out.extend_from_slice(&(self.sessions.len() as u32).to_be_bytes());
        for s in &self.sessions {
            put_str(&mut out, &s.id);
            out.extend_from_slice(&s.start_ms.to_be_bytes());
            out.extend_from_slice(&s.dump_ms.to_be_bytes());
            put_str(&mut out, &s.jvm);
            put_str(&mut out, &s.command);
        }
        put_classes(&mut out, &self.classes);
        if v >= 2 {
            out.extend_from_slice(&(self.tests.len() as u32).to_be_bytes());
            for (name, classes) in &self.tests {
                put_str(&mut out, name);
                put_classes(&mut out, classes);
            }
        }
        out
    }

    /// Adds one class's counts (saturating). The same class with another number of counters
    /// under the same hash is malformed data.
    pub fn add_class(&mut self, name: &str, hash: u64, counts: &[u64]) -> Result<(), DataError> {
        add_into(&mut self.classes, name, hash, counts)
    }

    /// Takes counts back that an earlier dump of this JVM added (saturating at 0; a class not
    /// in the data is left alone): a call a dump counted as its block's exit because it was
    /// still running, which has returned since ([`super::inflight`]).
    pub fn take_back(&mut self, name: &str, hash: u64, counts: &[u64]) {
        if let Some(e) = self.classes.get_mut(&(name.to_string(), hash)) {
            for (a, b) in e.iter_mut().zip(counts) {
                *a = a.saturating_sub(*b);
            }
        }
    }

    /// Adds one class's counts while test `test` ran (saturating).
    pub fn add_test_class(
        &mut self,
        test: &str,
        name: &str,
        hash: u64,
        counts: &[u64],
    ) -> Result<(), DataError> {
        add_into(
            self.tests.entry(test.to_string()).or_default(),
            name,
            hash,
            counts,
        )
    }

    /// The first session of `other` that this data holds already: the same run's data given
    /// twice (a file twice, or a merged file and one of its parts). A session id names one
    /// JVM (host, pid and start time), and a JVM's data is in one file: its repeated dumps
    /// update its session in place, and one that falls back to `<covfile>.<pid>` writes its
    /// whole run there.
    pub fn shared_session<'a>(&self, other: &'a CovData) -> Option<&'a Session> {
        other
            .sessions
            .iter()
            .find(|s| self.sessions.iter().any(|t| t.id == s.id))
    }

    /// Session ids listed more than once in this data (once each): written by a merge of data
    /// with itself (older bci versions allowed it), whose counts are then doubled.
    pub fn repeated_sessions(&self) -> Vec<&str> {
        let mut seen = std::collections::BTreeSet::new();
        let mut twice = Vec::new();
        for s in &self.sessions {
            if !seen.insert(s.id.as_str()) && !twice.contains(&s.id.as_str()) {
                twice.push(s.id.as_str());
            }
        }
        twice
    }

    /// Refuses data holding a session this data holds already (its counts would be added
    /// twice).
    fn check_sessions(&self, other: &CovData) -> Result<(), DataError> {
        match self.shared_session(other) {
            Some(s) => Err(DataError(format!(
                "session {}: in the data already (that run's counts would be added twice)",
                s.id
            ))),
            None => Ok(()),
        }
    }

    /// Adds another data set's classes and per-test counts as they are (no stale check: the
    /// same class under two hashes stays apart, as two keys). A session of `other` already
    /// here is an error (nothing is added).
    pub fn add_all(&mut self, other: &CovData) -> Result<(), DataError> {
        self.check_sessions(other)?;
        for ((name, hash), v) in &other.classes {
            self.add_class(name, *hash, v)?;
        }
        for (t, classes) in &other.tests {
            for ((name, hash), v) in classes {
                self.add_test_class(t, name, *hash, v)?;
            }
        }
        self.sessions.extend(other.sessions.iter().cloned());
        Ok(())
    }

    /// Adds another data set: sessions appended, counts summed (saturating). A class present
    /// under two hashes is stale: an error naming it, or with `ignore_stale` the incoming
    /// class is skipped and named in the returned list. A session of `other` already here is
    /// an error (nothing is added).
    pub fn merge(&mut self, other: &CovData, ignore_stale: bool) -> Result<Vec<String>, DataError> {
        self.check_sessions(other)?;
        let mut skipped = Vec::new();
        for ((name, hash), v) in &other.classes {
            let stale = self
                .classes
                .range((name.clone(), 0)..=(name.clone(), u64::MAX))
                .find(|((_, h), _)| h != hash)
                .map(|((_, h), _)| *h);
            if let Some(here) = stale {
                if ignore_stale {
                    skipped.push(name.clone());
                    continue;
                }
                return Err(DataError(format!(
                    "class {name}: data from two different builds (hashes differ: {here:016x} \
                     here, {hash:016x} added); merge data of one build, or --ignore-stale"
                )));
            }
            self.add_class(name, *hash, v)?;
        }
        for (t, classes) in &other.tests {
            for ((name, hash), v) in classes {
                if !skipped.contains(name) {
                    self.add_test_class(t, name, *hash, v)?;
                }
            }
        }
        self.sessions.extend(other.sessions.iter().cloned());
        Ok(skipped)
    }

    /// Counts of a class with this hash, if recorded.
    pub fn counts(&self, name: &str, hash: u64) -> Option<&[u64]> {
        self.classes
            .get(&(name.to_string(), hash))
            .map(|v| v.as_slice())
    }

    /// Whether data for `name` exists under a hash other than `hash` (a different build).
    pub fn is_stale(&self, name: &str, hash: u64) -> bool {
        self.classes
            .range((name.to_string(), 0)..=(name.to_string(), u64::MAX))
            .any(|((_, h), _)| *h != hash)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CovData {
        let mut d = CovData::default();
        d.sessions.push(Session {
            id: "host-1".into(),
            start_ms: 1,
            dump_ms: 2,
            jvm: "17".into(),
            command: "java Main ä".into(),
        });
        d.add_class("a/B", 7, &[1, 2, 3]).unwrap();
        d.add_class("a/C", 9, &[u64::MAX - 1]).unwrap();
        d
    }

    #[test]
    fn round_trip_and_merge_saturate() {
        let d = sample();
        let b = d.to_bytes();
        assert_eq!(CovData::parse(&b).unwrap(), d);
        let mut m = d.clone();
        m.merge(&another_run(&d), false).unwrap();
        assert_eq!(m.counts("a/B", 7).unwrap(), &[2, 4, 6]);
        assert_eq!(m.counts("a/C", 9).unwrap(), &[u64::MAX]);
        assert_eq!(m.sessions.len(), 2);
    }

    /// The same counts from another JVM (another session).
    fn another_run(d: &CovData) -> CovData {
        let mut o = d.clone();
        for s in &mut o.sessions {
            s.id.push_str("-other");
        }
        o
    }

    #[test]
    fn one_runs_data_twice_is_refused_and_adds_nothing() {
        let d = sample();
        for add in [
            |m: &mut CovData, o: &CovData| m.merge(o, false).map(|_| ()),
            |m: &mut CovData, o: &CovData| m.add_all(o),
        ] {
            let mut m = d.clone();
            let e = add(&mut m, &d).unwrap_err();
            assert_eq!(
                e.0,
                "session host-1: in the data already (that run's counts would be added twice)"
            );
            assert_eq!(m, d);
            // a merged file and one of its parts
            add(&mut m, &another_run(&d)).unwrap();
            let before = m.clone();
            assert!(add(&mut m, &another_run(&d)).is_err());
            assert_eq!(m, before);
            assert_eq!(m.shared_session(&d).unwrap().id, "host-1");
            assert!(m.repeated_sessions().is_empty());
        }
        let mut twice = sample();
        twice.sessions.push(twice.sessions[0].clone());
        twice.sessions.push(twice.sessions[0].clone());
        assert_eq!(twice.repeated_sessions(), ["host-1"]);
    }

    #[test]
    fn per_test_counts_round_trip_as_version_2_and_version_1_still_reads() {
        let v1 = sample().to_bytes();
        assert_eq!(u16::from_be_bytes([v1[8], v1[9]]), 1);
        assert_eq!(CovData::parse(&v1).unwrap(), sample());
        let mut d = sample();
        d.add_test_class("a.BTest#one()", "a/B", 7, &[1, 0, 0])
            .unwrap();
        d.add_test_class("a.BTest#two()", "a/B", 7, &[0, 2, 0])
            .unwrap();
        let b = d.to_bytes();
        assert_eq!(u16::from_be_bytes([b[8], b[9]]), 2);
        let back = CovData::parse(&b).unwrap();
        assert_eq!(back, d);
        assert_eq!(
            back.tests["a.BTest#two()"][&("a/B".to_string(), 7)],
            vec![0, 2, 0]
        );
        let mut m = back.clone();
        m.merge(&another_run(&back), false).unwrap();
        assert_eq!(
            m.tests["a.BTest#one()"][&("a/B".to_string(), 7)],
            vec![2, 0, 0]
        );
        for n in 0..b.len() {
            assert!(CovData::parse(&b[..n]).is_err(), "prefix {n}");
        }
        let mut v3 = b.clone();
        v3[9] = 3;
        assert!(CovData::parse(&v3).unwrap_err().0.contains("version 3"));
    }

    #[test]
    fn stale_classes_are_refused_or_skipped() {
        let mut d = sample();
        let mut other = CovData::default();
        other.add_class("a/B", 8, &[5]).unwrap();
        let e = d.merge(&other, false).unwrap_err();
        assert!(
            e.0.contains("class a/B") && e.0.contains(&format!("{:016x} added", 8)),
            "{e}"
        );
        assert_eq!(d.merge(&other, true).unwrap(), vec!["a/B".to_string()]);
        assert!(d.is_stale("a/B", 8));
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let b = sample().to_bytes();
        for n in 0..b.len() {
            assert!(CovData::parse(&b[..n]).is_err(), "prefix {n}");
        }
        let mut long = b.clone();
        long.push(0);
        assert!(CovData::parse(&long).is_err());
        // A counter count far past the end is refused before allocating.
        let mut huge = sample();
        huge.classes.clear();
        let mut hb = huge.to_bytes();
        hb.truncate(hb.len() - 4);
        hb.extend_from_slice(&1u32.to_be_bytes());
        put_str(&mut hb, "x");
        hb.extend_from_slice(&0u64.to_be_bytes());
        hb.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(CovData::parse(&hb).unwrap_err().0.contains("past the end"));
    }
}
