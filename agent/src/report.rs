//! Reports from a snapshot of the runtime's per-thread data: HPROF's `cpu=times` text, a
//! per-method table and collapsed stacks. Pure: data in, text out.

use crate::options::{Clock, Format, Options};
use crate::registry::MethodRec;
use std::collections::HashMap;
use std::fmt::Write;

/// One call-path node of one thread: the path of `prefix` followed by method `id`.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub prefix: usize,
    pub id: u32,
    pub count: u64,
    pub self_ns: u64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadData {
    pub name: Option<String>,
    /// Index = node id; node 0 is the root (empty path).
    pub nodes: Vec<Node>,
    /// Inclusive time per method id (outermost frames only, so recursion is not double counted).
    pub total_ns: Vec<u64>,
    pub mismatches: u64,
    /// Entries whose call-path node was not in the caller's callee cache.
    pub cache_misses: u64,
    /// Entries that took the runtime's out-of-line path.
    pub slow_enters: u64,
    /// The rules' `timer` probe: (count, total ns) per method id.
    pub timer: Vec<(u64, u64)>,
}

impl ThreadData {
    /// Decodes the `long[]` of `Probes.export`: `[n, (prefix, id, count, self)*n, m, total*m, mismatches]`.
    pub fn decode(name: Option<String>, v: &[i64]) -> Option<ThreadData> {
        let mut it = v.iter().copied();
        let n = usize::try_from(it.next()?).ok()?;
        let mut nodes = Vec::with_capacity(n);
        for _ in 0..n {
            let prefix = usize::try_from(it.next()?).ok()?;
            let id = u32::try_from(it.next()?).ok()?;
            let count = it.next()?.max(0) as u64;
            let self_ns = it.next()?.max(0) as u64;
            nodes.push(Node {
                prefix,
                id,
                count,
                self_ns,
            });
        }
        let m = usize::try_from(it.next()?).ok()?;
        let mut total_ns = Vec::with_capacity(m);
        for _ in 0..m {
            total_ns.push(it.next()?.max(0) as u64);
        }
        let mismatches = it.next().unwrap_or(0).max(0) as u64;
        let cache_misses = it.next().unwrap_or(0).max(0) as u64;
        let slow_enters = it.next().unwrap_or(0).max(0) as u64;
        let nt = usize::try_from(it.next().unwrap_or(0)).unwrap_or(0);
        let mut timer = Vec::with_capacity(nt.min(1 << 20));
        for _ in 0..nt {
            let c = it.next()?.max(0) as u64;
            let t = it.next()?.max(0) as u64;
            timer.push((c, t));
        }
        if nodes.iter().any(|nd| nd.prefix >= n) {
            return None;
        }
        Some(ThreadData {
            name,
            nodes,
            total_ns,
            mismatches,
            cache_misses,
            slow_enters,
            timer,
        })
    }

    /// Frames of node `k`, top (callee) first.
    fn frames(&self, mut k: usize) -> Vec<u32> {
        let mut f = Vec::new();
        while k != 0 && f.len() < 1024 {
            f.push(self.nodes[k].id);
            k = self.nodes[k].prefix;
        }
        f
    }
}

#[derive(Clone)]
pub struct Snapshot {
    pub threads: Vec<ThreadData>,
    pub methods: Vec<MethodRec>,
    /// `ctime()` text for the header and the CPU TIME line.
    pub date: String,
    pub uninstrumented_early: usize,
    /// Classes the agent could not instrument (`name: reason`), left original.
    pub left_classes: Vec<String>,
    /// Methods left original in instrumented classes (`class.method(desc): reason`).
    pub left_methods: Vec<String>,
    /// Why the runtime stopped recording early (e.g. out of memory), if it did.
    pub failure: Option<String>,
}

struct Trace {
    thread: Option<usize>,
    frames: Vec<u32>,
    count: u64,
    self_ns: u64,
}

fn method_parts(methods: &[MethodRec], id: u32) -> (String, String) {
    match methods.get(id as usize) {
        Some(m) => (m.dotted_class(), m.name.clone()),
        None => ("unknown".to_string(), format!("m{id}")),
    }
}

fn traces(s: &Snapshot, by_thread: bool) -> Vec<Trace> {
    let mut map: HashMap<(Option<usize>, Vec<u32>), (u64, u64)> = HashMap::new();
    for (ti, t) in s.threads.iter().enumerate() {
        for k in 1..t.nodes.len() {
            let nd = &t.nodes[k];
            if nd.count == 0 && nd.self_ns == 0 {
                continue;
            }
            let key = (by_thread.then_some(ti), t.frames(k));
            let e = map.entry(key).or_insert((0, 0));
            e.0 += nd.count;
            e.1 += nd.self_ns;
        }
    }
    let mut v: Vec<Trace> = map
        .into_iter()
        .map(|((thread, frames), (count, self_ns))| Trace {
            thread,
            frames,
            count,
            self_ns,
        })
        .collect();
    v.sort_by(|a, b| {
        b.self_ns
            .cmp(&a.self_ns)
            .then(b.count.cmp(&a.count))
            .then(a.thread.cmp(&b.thread))
            .then(a.frames.cmp(&b.frames))
    });
    v
}

pub struct MethodRow {
    pub id: u32,
    pub count: u64,
    pub self_ns: u64,
    pub total_ns: u64,
}

/// Per-method sums over all threads and call paths.
pub fn method_rows(s: &Snapshot) -> Vec<MethodRow> {
    let mut rows: HashMap<u32, MethodRow> = HashMap::new();
    for t in &s.threads {
        for nd in t.nodes.iter().skip(1) {
            let r = rows.entry(nd.id).or_insert(MethodRow {
                id: nd.id,
                count: 0,
                self_ns: 0,
                total_ns: 0,
            });
            r.count += nd.count;
            r.self_ns += nd.self_ns;
        }
    }
    // totals after every thread's nodes: a total may come with another entry than the
    // method's nodes (sampled totals are kept for all threads at once)
    for t in &s.threads {
        for (id, tot) in t.total_ns.iter().enumerate() {
            if *tot > 0 {
                if let Some(r) = rows.get_mut(&(id as u32)) {
                    r.total_ns += tot;
                }
            }
        }
    }
    let mut v: Vec<MethodRow> = rows
        .into_values()
        .filter(|r| r.count > 0 || r.self_ns > 0 || r.total_ns > 0)
        .collect();
    v.sort_by(|a, b| {
        b.self_ns
            .cmp(&a.self_ns)
            .then(b.count.cmp(&a.count))
            .then(a.id.cmp(&b.id))
    });
    v
}

pub fn clock_description(o: &Options) -> String {
    match o.clock {
        Clock::Sample => format!(
            "clock=sample: probes read no clock; every {} ms an agent thread read each profiled \
             thread's CPU time (JVMTI GetThreadCpuTime) and charged the CPU time used since the \
             previous sample to the thread's current call path (self) and once to each method on \
             its shadow stack (total): times are sampled thread CPU time, counts are exact",
            o.interval_ms
        ),
        Clock::Wall => {
            "clock=wall: monotonic wall time, System.nanoTime() read at every entry and exit".into()
        }
        Clock::Cpu => {
            "clock=cpu: thread CPU time (CLOCK_THREAD_CPUTIME_ID) read at every entry and exit"
                .into()
        }
    }
}

fn total_self_ns(s: &Snapshot) -> u64 {
    s.threads
        .iter()
        .flat_map(|t| t.nodes.iter().skip(1))
        .map(|n| n.self_ns)
        .sum()
}

fn ms(ns: u64) -> u64 {
    (ns + 500_000) / 1_000_000
}

fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

pub fn render(o: &Options, s: &Snapshot) -> String {
    match o.format {
        Format::Hprof => {
            let mut out = hprof(o, s);
            out.push_str(&methods_table(o, s));
            out.push_str(&timer_table(s));
            out
        }
        Format::Methods => methods_table(o, s),
        Format::Collapsed => collapsed(o, s),
    }
}

/// HPROF's text: header, THREAD START records (thread=y), TRACE records, CPU TIME block.
pub fn hprof(o: &Options, s: &Snapshot) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "JAVA PROFILE 1.0.1, created {}", s.date);
    out.push('\n');
    out.push_str("Header for -agentlib:bciagent (exact cpu=times by bytecode instrumentation)\n\n");
    let _ = writeln!(
        out,
        "Counts are exact: every instrumented method calls a probe at entry, before each return and\n\
         when an exception leaves it. {}.\n\
         CPU TIME (ms) rows are call paths of the top {} frames{}; count = invocations (counted at\n\
         entry); self = time not spent in instrumented callees. Classes loaded before the\n\
         runtime existed and so left original: {}.\n\
         Could not be instrumented and so left original: {} classes, {} methods{}",
        clock_description(o),
        o.depth,
        if o.thread {
            ", per thread (the first 256 threads; later ones share the rows of \"other threads\")"
        } else {
            ""
        },
        s.uninstrumented_early,
        s.left_classes.len(),
        s.left_methods.len(),
        if s.left_classes.is_empty() && s.left_methods.is_empty() {
            "."
        } else {
            ":"
        }
    );
    for c in &s.left_classes {
        let _ = writeln!(out, "  class {c}");
    }
    for m in &s.left_methods {
        let _ = writeln!(out, "  method {m}");
    }
    out.push('\n');
    if let Some(f) = &s.failure {
        let _ = writeln!(out, "RECORDING STOPPED: {f}.\n");
    }
    if o.thread {
        for (i, t) in s.threads.iter().enumerate() {
            let _ = writeln!(
                out,
                "THREAD START (obj=0, id = {}, name=\"{}\", group=\"\")",
                200001 + i,
                t.name.as_deref().unwrap_or("")
            );
        }
    }
    let total = total_self_ns(s);
    let all = traces(s, o.thread);
    // rows: cut at cutoff (fraction of total self) or the first trace without calls or time
    // (a trace with time but no completed call is a frame still running at the dump: kept, so
    // that the rows add up to the total)
    let mut rows = Vec::new();
    for t in &all {
        if t.count == 0 && t.self_ns == 0 {
            break;
        }
        let frac = if total == 0 {
            0.0
        } else {
            t.self_ns as f64 / total as f64
        };
        if frac < o.cutoff {
            break;
        }
        rows.push(t);
    }
    let serial = |i: usize| 300001 + i;
    for (i, t) in rows.iter().enumerate() {
        match t.thread {
            Some(th) => {
                let _ = writeln!(out, "TRACE {}: (thread={})", serial(i), 200001 + th);
            }
            None => {
                let _ = writeln!(out, "TRACE {}:", serial(i));
            }
        }
        // Line numbers: the top frame was at its method's first line when the call was counted
        // (HPROF's cpu=times took its traces at entry too); where a caller frame was (the call
        // site) is not recorded, so it gets HPROF's "Unknown line", never a line it was not at.
        for (depth, &f) in t.frames.iter().enumerate() {
            let (class, name, src, line) = match s.methods.get(f as usize) {
                Some(m) => (
                    m.dotted_class(),
                    m.name.clone(),
                    m.source_file
                        .clone()
                        .unwrap_or_else(|| "Unknown Source".into()),
                    match (o.lineno && depth == 0, m.first_line) {
                        (true, Some(l)) => l.to_string(),
                        _ => "Unknown line".to_string(),
                    },
                ),
                None => (
                    "unknown".into(),
                    format!("m{f}"),
                    "Unknown Source".into(),
                    "Unknown line".into(),
                ),
            };
            let _ = writeln!(out, "\t{class}.{name}({src}:{line})");
        }
    }
    let _ = writeln!(
        out,
        "CPU TIME (ms) BEGIN (total = {}) {}",
        ms(total),
        s.date
    );
    out.push_str("rank   self  accum   count trace method\n");
    let mut accum = 0.0;
    for (i, t) in rows.iter().enumerate() {
        let p = pct(t.self_ns, total);
        accum += p;
        let (class, name) = method_parts(&s.methods, t.frames.first().copied().unwrap_or(0));
        let _ = writeln!(
            out,
            "{:4} {:5.2}% {:5.2}% {:7} {:5} {}.{}",
            i + 1,
            p,
            accum,
            t.count,
            serial(i),
            class,
            name
        );
    }
    out.push_str("CPU TIME (ms) END\n");
    out
}

/// What HPROF never printed: per method, count, self and total (inclusive) time.
pub fn methods_table(o: &Options, s: &Snapshot) -> String {
    let mut out = String::new();
    let total = total_self_ns(s);
    let rows = method_rows(s);
    let _ = writeln!(
        out,
        "METHODS BEGIN (total = {} ms, methods = {}, clock = {}) {}",
        ms(total),
        rows.len(),
        o.clock.name(),
        s.date
    );
    out.push_str("rank   self  total      count    self(ms)   total(ms) method\n");
    for (i, r) in rows.iter().enumerate() {
        let desc = s
            .methods
            .get(r.id as usize)
            .map(|m| m.desc.as_str())
            .unwrap_or("");
        let (class, name) = method_parts(&s.methods, r.id);
        let _ = writeln!(
            out,
            "{:4} {:5.2}% {:5.2}% {:10} {:11.3} {:11.3} {}.{}{}",
            i + 1,
            pct(r.self_ns, total),
            pct(r.total_ns, total),
            r.count,
            r.self_ns as f64 / 1e6,
            r.total_ns as f64 / 1e6,
            class,
            name,
            desc
        );
    }
    if !s.left_classes.is_empty() || !s.left_methods.is_empty() {
        let _ = writeln!(
            out,
            "# left original (not counted): {} classes, {} methods",
            s.left_classes.len(),
            s.left_methods.len()
        );
    }
    let mism: u64 = s.threads.iter().map(|t| t.mismatches).sum();
    if mism > 0 {
        // which threads: a first clue to where a probe went missing
        let by_thread: Vec<String> = s
            .threads
            .iter()
            .filter(|t| t.mismatches > 0)
            .map(|t| format!("{} ({})", t.name.as_deref().unwrap_or("?"), t.mismatches))
            .collect();
        let _ = writeln!(
            out,
            "# {mism} probe exits did not match the shadow stack (frames ended early); threads: {}",
            by_thread.join(", ")
        );
    }
    if let Some(f) = &s.failure {
        let _ = writeln!(out, "# recording stopped: {f}");
    }
    out.push_str("METHODS END\n");
    out
}

/// The rules' `timer` probe (per-method System.nanoTime durations), if any method used it.
pub fn timer_table(s: &Snapshot) -> String {
    let mut sums: HashMap<u32, (u64, u64)> = HashMap::new();
    for t in &s.threads {
        for (id, (c, ns)) in t.timer.iter().enumerate() {
            if *c > 0 {
                let e = sums.entry(id as u32).or_insert((0, 0));
                e.0 += c;
                e.1 += ns;
            }
        }
    }
    if sums.is_empty() {
        return String::new();
    }
    let mut v: Vec<(u32, (u64, u64))> = sums.into_iter().collect();
    v.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(&b.0)));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "TIMER BEGIN (timer probe: System.nanoTime from entry to exit) {}",
        s.date
    );
    out.push_str("     count    total(ms) method\n");
    for (id, (c, ns)) in v {
        let (class, name) = method_parts(&s.methods, id);
        let desc = s
            .methods
            .get(id as usize)
            .map(|m| m.desc.as_str())
            .unwrap_or("");
        let _ = writeln!(
            out,
            "{:10} {:12.3} {}.{}{}",
            c,
            ns as f64 / 1e6,
            class,
            name,
            desc
        );
    }
    out.push_str("TIMER END\n");
    out
}

/// Collapsed stacks (`a;b;c weight`, oldest frame first) for flame-graph tools. The weight is
/// self time in microseconds; with `thread=y` the thread name is the first frame.
pub fn collapsed(o: &Options, s: &Snapshot) -> String {
    let mut all = traces(s, o.thread);
    all.sort_by(|a, b| {
        a.thread
            .cmp(&b.thread)
            .then(a.frames.iter().rev().cmp(b.frames.iter().rev()))
    });
    // one line per distinct stack text: overloads (same class and name) and threads of the same
    // name would otherwise repeat a stack, which flame-graph tools add up anyway
    let mut lines: Vec<(String, u64)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for t in &all {
        if t.self_ns == 0 {
            continue;
        }
        let mut parts: Vec<String> = Vec::new();
        if let Some(th) = t.thread {
            parts.push(
                s.threads[th]
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("thread-{th}"))
                    .replace([';', ' '], "_"),
            );
        }
        for &f in t.frames.iter().rev() {
            let (c, n) = method_parts(&s.methods, f);
            parts.push(format!("{c}.{n}").replace([';', ' '], "_"));
        }
        let stack = parts.join(";");
        match index.get(&stack) {
            Some(&i) => lines[i].1 += t.self_ns,
            None => {
                index.insert(stack.clone(), lines.len());
                lines.push((stack, t.self_ns));
            }
        }
    }
    let mut out = String::new();
    for (stack, ns) in lines {
        let us = ns / 1000;
        if us > 0 {
            let _ = writeln!(out, "{stack} {us}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(c: &str, n: &str) -> MethodRec {
        MethodRec {
            class: c.into(),
            name: n.into(),
            desc: "()V".into(),
            source_file: Some("F.java".into()),
            first_line: Some(3),
        }
    }

    fn snap() -> Snapshot {
        // main -> fib -> fib ; main calls fib once, fib calls fib twice
        let t = ThreadData {
            name: Some("main".into()),
            nodes: vec![
                Node {
                    prefix: 0,
                    id: 0,
                    count: 0,
                    self_ns: 0,
                },
                Node {
                    prefix: 0,
                    id: 0,
                    count: 1,
                    self_ns: 1_000_000,
                },
                Node {
                    prefix: 1,
                    id: 1,
                    count: 1,
                    self_ns: 2_000_000,
                },
                Node {
                    prefix: 2,
                    id: 1,
                    count: 2,
                    self_ns: 3_000_000,
                },
            ],
            total_ns: vec![6_000_000, 5_000_000],
            mismatches: 0,
            cache_misses: 0,
            slow_enters: 0,
            timer: Vec::new(),
        };
        Snapshot {
            threads: vec![t],
            methods: vec![rec("Fib", "main"), rec("Fib", "fib")],
            date: "Sun Nov 22 07:31:02 2026".into(),
            uninstrumented_early: 0,
            left_classes: Vec::new(),
            left_methods: Vec::new(),
            failure: None,
        }
    }

    #[test]
    fn hprof_block() {
        let o = Options::default();
        let txt = hprof(&o, &snap());
        assert!(
            txt.contains("CPU TIME (ms) BEGIN (total = 6) Sun Nov 22 07:31:02 2026\n"),
            "{txt}"
        );
        assert!(txt.contains("rank   self  accum   count trace method\n"));
        assert!(
            txt.contains("   1 50.00% 50.00%       2 300001 Fib.fib\n"),
            "{txt}"
        );
        assert!(
            txt.contains("   3 16.67% 100.00%       1 300003 Fib.main\n"),
            "{txt}"
        );
        assert!(
            txt.contains(
                "TRACE 300001:\n\tFib.fib(F.java:3)\n\tFib.fib(F.java:Unknown line)\n\tFib.main(F.java:Unknown line)\n"
            ),
            "{txt}"
        );
        assert!(txt.ends_with("CPU TIME (ms) END\n"));
        assert!(
            txt.contains("left original: 0 classes, 0 methods.\n"),
            "{txt}"
        );
        let mut s = snap();
        s.left_methods
            .push("Big.big(I)I: Code: code too large".into());
        let txt = hprof(&o, &s);
        assert!(
            txt.contains(
                "left original: 0 classes, 1 methods:\n  method Big.big(I)I: Code: code too large\n"
            ),
            "{txt}"
        );
    }

    #[test]
    fn methods_and_collapsed() {
        let o = Options::default();
        let s = snap();
        let rows = method_rows(&s);
        assert_eq!(rows[0].count, 3);
        assert_eq!(rows[0].self_ns, 5_000_000);
        assert_eq!(rows[0].total_ns, 5_000_000);
        let c = collapsed(&o, &s);
        assert!(c.contains("Fib.main;Fib.fib;Fib.fib 3000\n"), "{c}");
        let mut s3 = s.clone();
        s3.threads[0].mismatches = 2;
        let m = methods_table(&o, &s3);
        assert!(
            m.contains("# 2 probe exits did not match the shadow stack (frames ended early); threads: main (2)\n"),
            "{m}"
        );
        assert!(
            m.starts_with("METHODS BEGIN (total = 6 ms, methods = 2, clock = sample)"),
            "{m}"
        );
        // an overload of fib (same class and name, another id) on the same path: one line
        let mut s2 = s.clone();
        s2.methods.push(rec("Fib", "fib"));
        s2.threads[0].nodes.push(Node {
            prefix: 2,
            id: 2,
            count: 1,
            self_ns: 500_000,
        });
        let c = collapsed(&o, &s2);
        assert!(c.contains("Fib.main;Fib.fib;Fib.fib 3500\n"), "{c}");
        assert_eq!(c.matches("Fib.main;Fib.fib;Fib.fib ").count(), 1, "{c}");
    }

    /// Sampled totals are kept for all threads at once and come with the first entry, whose
    /// nodes may not include the method: they still count.
    #[test]
    fn totals_from_another_entry() {
        let mut s = snap();
        let mut first = ThreadData {
            name: Some("ended threads".into()),
            nodes: vec![Node {
                prefix: 0,
                id: 0,
                count: 0,
                self_ns: 0,
            }],
            ..ThreadData::default()
        };
        first.total_ns = vec![0, 7_000_000];
        s.threads[0].total_ns.clear();
        s.threads.insert(0, first);
        let rows = method_rows(&s);
        let fib = rows.iter().find(|r| r.id == 1).unwrap();
        assert_eq!(fib.total_ns, 7_000_000);
    }

    #[test]
    fn decode_roundtrip() {
        let v = [2i64, 0, 0, 0, 0, 0, 7, 5, 9, 1, 3, 0, 4, 0];
        let t = ThreadData::decode(None, &v).unwrap();
        assert_eq!(
            t.nodes[1],
            Node {
                prefix: 0,
                id: 7,
                count: 5,
                self_ns: 9
            }
        );
        assert_eq!(t.total_ns, vec![3]);
        assert!(ThreadData::decode(None, &[5, 1]).is_none());
    }
}
