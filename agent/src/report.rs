//! Reports from a snapshot of the runtime's per-thread data: HPROF's `cpu=times` text, a
//! per-method table and collapsed stacks. Pure: data in, text out.

use crate::options::{Clock, Format, Options};
use crate::registry::MethodRec;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::{self, Write};

/// One call-path node of one thread: the path of `prefix` followed by method `id`.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// A node before this one (node 0, the root, excepted).
    pub prefix: u32,
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
    /// Decodes the `long[]` of `Probes.export`: `[n, (prefix, id, count, self)*n, m, total*m,
    /// mismatches, misses, slow entries, timers, (count, total)*]`.
    pub fn decode(name: Option<String>, v: &[i64]) -> Option<ThreadData> {
        Self::decode_iter(name, v.iter().copied())
    }

    /// Like [`decode`](Self::decode), reading the array as it comes (the agent reads a large
    /// profile's in parts). Every node's prefix must come before it (the runtime writes its
    /// tree in that order): a path is then never longer than the nodes and never a loop.
    pub fn decode_iter(name: Option<String>, it: impl Iterator<Item = i64>) -> Option<ThreadData> {
        let mut it = it;
        let n = usize::try_from(it.next()?).ok()?;
        if n > u32::MAX as usize {
            return None;
        }
        let mut nodes = Vec::with_capacity(n.min(1 << 20));
        for k in 0..n {
            let prefix = u32::try_from(it.next()?).ok()?;
            let id = u32::try_from(it.next()?).ok()?;
            let count = it.next()?.max(0) as u64;
            let self_ns = it.next()?.max(0) as u64;
            if k > 0 && prefix as usize >= k {
                return None;
            }
            nodes.push(Node {
                prefix: if k == 0 { 0 } else { prefix },
                id,
                count,
                self_ns,
            });
        }
        let m = usize::try_from(it.next()?).ok()?;
        let mut total_ns = Vec::with_capacity(m.min(1 << 20));
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
        nodes.shrink_to_fit();
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

fn method_parts(methods: &[MethodRec], id: u32) -> (String, String) {
    match methods.get(id as usize) {
        Some(m) => (m.dotted_class(), m.name.clone()),
        None => ("unknown".to_string(), format!("m{id}")),
    }
}

/// The call paths a report lists, one node per distinct path: with `thread=y` each entry's
/// tree, else one tree for all entries. An entry's own nodes serve as they are when no two
/// of them share a prefix and method (the runtime's exports: nodes of its shared tree);
/// otherwise the entries' nodes are merged by path. Nothing per path is allocated beyond that:
/// a trace is a node, its frames are read from the tree when needed.
struct Paths<'a> {
    trees: Vec<(Option<usize>, Cow<'a, [Node]>)>,
}

/// A call path with calls or time: node `node` of tree `tree`.
#[derive(Clone, Copy)]
struct Trace {
    tree: u32,
    node: u32,
    count: u64,
    self_ns: u64,
}

/// Most frames read from a path (as many as a report ever printed).
const MAX_FRAMES: usize = 1024;

impl<'a> Paths<'a> {
    fn new(s: &'a Snapshot, by_thread: bool) -> Paths<'a> {
        let trees = if by_thread {
            s.threads
                .iter()
                .enumerate()
                .map(|(ti, t)| (Some(ti), distinct(&[t])))
                .collect()
        } else {
            let with: Vec<&ThreadData> = s.threads.iter().filter(|t| t.nodes.len() > 1).collect();
            vec![(None, distinct(&with))]
        };
        Paths { trees }
    }

    fn thread(&self, t: &Trace) -> Option<usize> {
        self.trees[t.tree as usize].0
    }

    /// The method ids of a trace's frames, top (callee) first.
    fn frames(&self, t: &Trace) -> impl Iterator<Item = u32> + '_ {
        let nodes: &[Node] = &self.trees[t.tree as usize].1;
        let mut k = t.node as usize;
        let mut n = 0;
        std::iter::from_fn(move || {
            if k == 0 || n >= MAX_FRAMES {
                return None;
            }
            let nd = nodes.get(k)?;
            n += 1;
            k = nd.prefix as usize;
            Some(nd.id)
        })
    }

    /// The traces with calls or time for which `keep(count, self_ns)` holds, unordered.
    fn traces(&self, keep: impl Fn(u64, u64) -> bool) -> Vec<Trace> {
        let mut v = Vec::new();
        for (ti, (_, nodes)) in self.trees.iter().enumerate() {
            for (k, nd) in nodes.iter().enumerate().skip(1) {
                if (nd.count != 0 || nd.self_ns != 0) && keep(nd.count, nd.self_ns) {
                    v.push(Trace {
                        tree: ti as u32,
                        node: k as u32,
                        count: nd.count,
                        self_ns: nd.self_ns,
                    });
                }
            }
        }
        v
    }

    /// The report's order: self time, then calls (both descending), thread, frames.
    fn order(&self, a: &Trace, b: &Trace) -> Ordering {
        b.self_ns
            .cmp(&a.self_ns)
            .then(b.count.cmp(&a.count))
            .then_with(|| self.thread(a).cmp(&self.thread(b)))
            .then_with(|| self.frames(a).cmp(self.frames(b)))
    }
}

/// The nodes of `ts` with one node per distinct path (see [`Paths`]).
fn distinct<'a>(ts: &[&'a ThreadData]) -> Cow<'a, [Node]> {
    if let [t] = ts {
        let mut keys: Vec<u64> = t
            .nodes
            .iter()
            .skip(1)
            .map(|n| (u64::from(n.prefix) << 32) | u64::from(n.id))
            .collect();
        keys.sort_unstable();
        if keys.windows(2).all(|w| w[0] != w[1]) {
            return Cow::Borrowed(&t.nodes);
        }
    }
    let mut out = vec![Node {
        prefix: 0,
        id: 0,
        count: 0,
        self_ns: 0,
    }];
    let mut index: HashMap<(u32, u32), u32> = HashMap::new();
    for t in ts {
        let mut canon: Vec<u32> = Vec::with_capacity(t.nodes.len());
        for (k, nd) in t.nodes.iter().enumerate() {
            if k == 0 {
                canon.push(0);
                continue;
            }
            // a prefix that is not an earlier node (hand-made data): the root
            let p = canon.get(nd.prefix as usize).copied().unwrap_or(0);
            let next = out.len() as u32;
            let c = *index.entry((p, nd.id)).or_insert(next);
            if c == next {
                out.push(Node {
                    prefix: p,
                    id: nd.id,
                    count: 0,
                    self_ns: 0,
                });
            }
            let m = &mut out[c as usize];
            m.count += nd.count;
            m.self_ns += nd.self_ns;
            canon.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` with every method id whose printed identity (class, name, descriptor) an earlier id has
/// replaced by that id: one class file loaded by two class loaders (a web application
/// redeployed) registers its methods twice, and its rows (methods, traces, timers) printed
/// twice, identical but for the numbers. A developer reads rows by name: they are one row,
/// counts and times summed, as coverage adds such classes up (and a redefined class keeps its
/// ids). Without such ids (nearly always) `s` itself, nothing copied.
fn merged(s: &Snapshot) -> Cow<'_, Snapshot> {
    let mut first: HashMap<(&str, &str, &str), u32> = HashMap::new();
    let canon: Vec<u32> = s
        .methods
        .iter()
        .enumerate()
        .map(|(i, m)| {
            *first
                .entry((m.class.as_str(), m.name.as_str(), m.desc.as_str()))
                .or_insert(i as u32)
        })
        .collect();
    if canon.iter().enumerate().all(|(i, &c)| c == i as u32) {
        return Cow::Borrowed(s);
    }
    // (ids beyond the methods known stay as they are)
    let id = |i: u32| canon.get(i as usize).copied().unwrap_or(i);
    let threads = s
        .threads
        .iter()
        .map(|t| {
            let mut total_ns = vec![0; t.total_ns.len()];
            for (i, &ns) in t.total_ns.iter().enumerate() {
                total_ns[id(i as u32) as usize] += ns;
            }
            let mut timer = vec![(0, 0); t.timer.len()];
            for (i, &(c, ns)) in t.timer.iter().enumerate() {
                let e = &mut timer[id(i as u32) as usize];
                e.0 += c;
                e.1 += ns;
            }
            ThreadData {
                name: t.name.clone(),
                nodes: t
                    .nodes
                    .iter()
                    .map(|n| Node { id: id(n.id), ..*n })
                    .collect(),
                total_ns,
                timer,
                ..*t
            }
        })
        .collect();
    Cow::Owned(Snapshot {
        threads,
        methods: s.methods.clone(),
        date: s.date.clone(),
        uninstrumented_early: s.uninstrumented_early,
        left_classes: s.left_classes.clone(),
        left_methods: s.left_methods.clone(),
        failure: s.failure.clone(),
    })
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
             its shadow stack (total): times are sampled thread CPU time, counts are exact. \
             Virtual threads are not sampled: the CPU time of code they run goes to their \
             carrier's frames (java.lang.VirtualThread.runContinuation); clock=cpu or clock=wall \
             times each call on the thread that made it",
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
    text(|w| render_to(o, s, w))
}

/// The report as [`render`] makes it, written to `w` as it is made (a large profile's report
/// is never all in memory).
pub fn render_to(o: &Options, s: &Snapshot, w: &mut dyn Write) -> io::Result<()> {
    let s = &*merged(s);
    match o.format {
        Format::Hprof => {
            hprof_to(o, s, w)?;
            methods_table_to(o, s, w)?;
            timer_table_to(s, w)
        }
        Format::Methods => methods_table_to(o, s, w),
        Format::Collapsed => collapsed_to(o, s, w),
    }
}

/// What `f` writes, as text.
fn text(f: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> String {
    let mut v: Vec<u8> = Vec::new();
    // writing to a Vec does not fail, and every writer writes only `str`s
    let _ = f(&mut v);
    String::from_utf8(v).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// HPROF's text: header, THREAD START records (thread=y), TRACE records, CPU TIME block.
pub fn hprof(o: &Options, s: &Snapshot) -> String {
    text(|w| hprof_to(o, &merged(s), w))
}

fn hprof_to(o: &Options, s: &Snapshot, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "JAVA PROFILE 1.0.1, created {}", s.date)?;
    out.write_all(b"\n")?;
    out.write_all(
        b"Header for -agentlib:bciagent (exact cpu=times by bytecode instrumentation)\n\n",
    )?;
    writeln!(
        out,
        "Counts are exact: every instrumented method calls a probe at entry, before each return and\n\
         when an exception leaves it; a HotSpot intrinsic, which may run without its bytecode, is\n\
         counted around its calls in instrumented methods instead. {}.\n\
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
    )?;
    for c in &s.left_classes {
        writeln!(out, "  class {c}")?;
    }
    for m in &s.left_methods {
        writeln!(out, "  method {m}")?;
    }
    out.write_all(b"\n")?;
    if let Some(f) = &s.failure {
        writeln!(out, "RECORDING STOPPED: {f}.\n")?;
    }
    if o.thread {
        for (i, t) in s.threads.iter().enumerate() {
            writeln!(
                out,
                "THREAD START (obj=0, id = {}, name=\"{}\", group=\"\")",
                200001 + i,
                // one record a line, whatever the name holds
                t.name
                    .as_deref()
                    .unwrap_or("")
                    .replace(|c: char| c.is_control(), " ")
            )?;
        }
    }
    let total = total_self_ns(s);
    let paths = Paths::new(s, o.thread);
    // rows: cut at cutoff (fraction of total self) or the first trace without calls or time
    // (a trace with time but no completed call is a frame still running at the dump: kept, so
    // that the rows add up to the total). In the report's order the fraction only falls: the
    // rows are the traces at or above the cutoff, sorted (the others never are).
    let frac = |self_ns: u64| {
        if total == 0 {
            0.0
        } else {
            self_ns as f64 / total as f64
        }
    };
    // (not below the cutoff, as the old loop's `frac < cutoff` break read it: NaN keeps all)
    let mut rows =
        paths.traces(|_, self_ns| frac(self_ns).partial_cmp(&o.cutoff) != Some(Ordering::Less));
    rows.sort_by(|a, b| paths.order(a, b));
    let serial = |i: usize| 300001 + i;
    for (i, t) in rows.iter().enumerate() {
        match paths.thread(t) {
            Some(th) => {
                writeln!(out, "TRACE {}: (thread={})", serial(i), 200001 + th)?;
            }
            None => {
                writeln!(out, "TRACE {}:", serial(i))?;
            }
        }
        // Line numbers: the top frame was at its method's first line when the call was counted
        // (HPROF's cpu=times took its traces at entry too); where a caller frame was (the call
        // site) is not recorded, so it gets HPROF's "Unknown line", never a line it was not at.
        for (depth, f) in paths.frames(t).enumerate() {
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
            writeln!(out, "\t{class}.{name}({src}:{line})")?;
        }
    }
    writeln!(
        out,
        "CPU TIME (ms) BEGIN (total = {}) {}",
        ms(total),
        s.date
    )?;
    out.write_all(b"rank   self  accum   count trace method\n")?;
    let mut accum = 0.0;
    for (i, t) in rows.iter().enumerate() {
        let p = pct(t.self_ns, total);
        accum += p;
        let (class, name) = method_parts(&s.methods, paths.frames(t).next().unwrap_or(0));
        writeln!(
            out,
            "{:4} {:5.2}% {:5.2}% {:7} {:5} {}.{}",
            i + 1,
            p,
            accum,
            t.count,
            serial(i),
            class,
            name
        )?;
    }
    out.write_all(b"CPU TIME (ms) END\n")
}

/// What HPROF never printed: per method, count, self and total (inclusive) time.
pub fn methods_table(o: &Options, s: &Snapshot) -> String {
    text(|w| methods_table_to(o, &merged(s), w))
}

fn methods_table_to(o: &Options, s: &Snapshot, out: &mut dyn Write) -> io::Result<()> {
    let total = total_self_ns(s);
    let rows = method_rows(s);
    writeln!(
        out,
        "METHODS BEGIN (total = {} ms, methods = {}, clock = {}) {}",
        ms(total),
        rows.len(),
        o.clock.name(),
        s.date
    )?;
    out.write_all(b"rank   self  total      count    self(ms)   total(ms) method\n")?;
    for (i, r) in rows.iter().enumerate() {
        let desc = s
            .methods
            .get(r.id as usize)
            .map(|m| m.desc.as_str())
            .unwrap_or("");
        let (class, name) = method_parts(&s.methods, r.id);
        writeln!(
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
        )?;
    }
    if !s.left_classes.is_empty() || !s.left_methods.is_empty() {
        writeln!(
            out,
            "# left original (not counted): {} classes, {} methods",
            s.left_classes.len(),
            s.left_methods.len()
        )?;
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
        writeln!(
            out,
            "# {mism} probe exits did not match the shadow stack (frames ended early); threads: {}",
            by_thread.join(", ")
        )?;
    }
    if let Some(f) = &s.failure {
        writeln!(out, "# recording stopped: {f}")?;
    }
    out.write_all(b"METHODS END\n")
}

/// The rules' `timer` probe (per-method System.nanoTime durations), if any method used it.
pub fn timer_table(s: &Snapshot) -> String {
    text(|w| timer_table_to(&merged(s), w))
}

fn timer_table_to(s: &Snapshot, out: &mut dyn Write) -> io::Result<()> {
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
        return Ok(());
    }
    let mut v: Vec<(u32, (u64, u64))> = sums.into_iter().collect();
    v.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(&b.0)));
    writeln!(
        out,
        "TIMER BEGIN (timer probe: System.nanoTime from entry to exit) {}",
        s.date
    )?;
    out.write_all(b"     count    total(ms) method\n")?;
    for (id, (c, ns)) in v {
        let (class, name) = method_parts(&s.methods, id);
        let desc = s
            .methods
            .get(id as usize)
            .map(|m| m.desc.as_str())
            .unwrap_or("");
        writeln!(
            out,
            "{:10} {:12.3} {}.{}{}",
            c,
            ns as f64 / 1e6,
            class,
            name,
            desc
        )?;
    }
    out.write_all(b"TIMER END\n")
}

/// Collapsed stacks (`a;b;c weight`, oldest frame first) for flame-graph tools. The weight is
/// self time in microseconds; with `thread=y` the thread name is the first frame.
/// A frame of a collapsed stack: `;` (the separator), spaces (before the count) and control
/// characters (a thread name may hold a line break) as `_`.
fn frame_text(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == ';' || c == ' ' || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// Whether a call path of some thread reached `depth` frames (a call that ran: its count is
/// not 0): its callees, if any, were recorded under their top `depth` frames only, so their
/// paths are cut.
pub fn reaches_depth(snap: &Snapshot, depth: usize) -> bool {
    snap.threads.iter().any(|t| {
        // every node's prefix comes before it (ThreadData::decode checks it)
        let mut len = vec![0usize; t.nodes.len()];
        (1..t.nodes.len()).any(|k| {
            len[k] = len.get(t.nodes[k].prefix as usize).map_or(0, |l| l + 1);
            t.nodes[k].count > 0 && len[k] >= depth
        })
    })
}

/// The agent's warning for a collapsed output written to `path` from `snap`, recorded with
/// `depth=depth`, if some call path reached that depth (as `bci report … format=collapsed`
/// warns for the runtime jar's data): its deeper stacks are cut and start mid-stack.
pub fn depth_warning(path: &str, snap: &Snapshot, depth: usize) -> Option<String> {
    if !reaches_depth(snap, depth) {
        return None;
    }
    let rerun = if depth < crate::options::MAX_DEPTH {
        format!(
            "give depth={} for whole stacks up to that depth",
            crate::options::MAX_DEPTH
        )
    } else {
        format!(
            "{} frames is the most recorded (depth=): deeper stacks stay cut",
            crate::options::MAX_DEPTH
        )
    };
    Some(format!(
        "{path} holds call paths of the top {depth} frames (depth={depth}) and some reached that \
         depth: each collapsed stack deeper than that is cut there and starts at a frame that is \
         not the program's root; {rerun}"
    ))
}

/// The collapsed output's notice that recording stopped: `RECORDING_STOPPED:_<why>` (spaces
/// and `;` as `_`, one frame).
pub fn stopped_frame(why: &str) -> String {
    frame_text(&format!("RECORDING STOPPED: {why}"))
}

pub fn collapsed(o: &Options, s: &Snapshot) -> String {
    text(|w| collapsed_to(o, &merged(s), w))
}

fn collapsed_to(o: &Options, s: &Snapshot, out: &mut dyn Write) -> io::Result<()> {
    if let Some(f) = &s.failure {
        // collapsed stacks have no comment syntax: the notice is a stack of one frame with
        // weight 0, which flame-graph tools read as a stack like any other and draw with no
        // width (flamegraph.pl, async-profiler's converter, speedscope); a line that is not
        // `stack weight` would be dropped with a warning by some and stop others
        writeln!(out, "{} 0", stopped_frame(f))?;
    }
    let paths = Paths::new(s, o.thread);
    // (thread, frames top first, self): the traces with time, by thread and stack from the root
    let mut all: Vec<(Option<usize>, Vec<u32>, u64)> = paths
        .traces(|_, self_ns| self_ns > 0)
        .iter()
        .map(|t| (paths.thread(t), paths.frames(t).collect(), t.self_ns))
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.iter().rev().cmp(b.1.iter().rev())));
    // one line per distinct stack text: overloads (same class and name) and threads of the same
    // name would otherwise repeat a stack, which flame-graph tools add up anyway
    let mut lines: Vec<(String, u64)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (thread, frames, self_ns) in &all {
        let mut parts: Vec<String> = Vec::new();
        if let Some(th) = *thread {
            // an unnamed thread ("") would be an empty root frame
            let name = s.threads[th].name.clone().filter(|n| !n.is_empty());
            parts.push(frame_text(&name.unwrap_or_else(|| format!("thread-{th}"))));
        }
        for &f in frames.iter().rev() {
            let (c, n) = method_parts(&s.methods, f);
            parts.push(frame_text(&format!("{c}.{n}")));
        }
        let stack = parts.join(";");
        match index.get(&stack) {
            Some(&i) => lines[i].1 += self_ns,
            None => {
                index.insert(stack.clone(), lines.len());
                lines.push((stack, *self_ns));
            }
        }
    }
    for (stack, ns) in lines {
        let us = ns / 1000;
        if us > 0 {
            writeln!(out, "{stack} {us}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "report_old.rs"]
mod old;

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

    /// Thread names with a line break, a tab, `;` or nothing at all (thread=y): every
    /// collapsed line is `frame;frame… count` with no empty frame, and every THREAD START
    /// record is one line.
    #[test]
    fn odd_thread_names_keep_one_line_per_stack() {
        let o = Options {
            thread: true,
            ..Options::default()
        };
        for (name, root) in [
            ("two\nlines", "two_lines"),
            ("tab\tbed; x", "tab_bed__x"),
            ("", "thread-0"),
        ] {
            let mut s = snap();
            s.threads[0].name = Some(name.into());
            let c = collapsed(&o, &s);
            assert_eq!(c.lines().count(), 3, "{name:?}: {c}");
            for l in c.lines() {
                let (stack, n) = l.rsplit_once(' ').unwrap();
                assert!(n.parse::<u64>().is_ok(), "{l}");
                assert!(stack.split(';').all(|f| !f.is_empty()), "{l}");
                assert!(stack.starts_with(&format!("{root};Fib.main")), "{l}");
            }
            let h = hprof(&o, &s);
            let starts: Vec<&str> = h
                .lines()
                .filter(|l| l.starts_with("THREAD START"))
                .collect();
            assert_eq!(starts.len(), 1, "{h}");
            assert!(starts[0].ends_with("group=\"\")"), "{}", starts[0]);
        }
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

    /// One class file loaded by two class loaders (a web application redeployed): its methods
    /// have two ids each, and were two identical rows with the counts split (101 and 100 of
    /// doGet, found by the server hunt). Now one row, everything summed, in every format.
    #[test]
    fn a_class_loaded_again_by_another_loader_gives_one_row_per_method() {
        let mut s = snap();
        // loader 2's Fib: main (id 2) calls fib (id 3) once, fib calls itself once
        s.methods.push(rec("Fib", "main"));
        s.methods.push(rec("Fib", "fib"));
        let t = &mut s.threads[0];
        t.nodes.push(Node {
            prefix: 0,
            id: 2,
            count: 1,
            self_ns: 1_000_000,
        });
        t.nodes.push(Node {
            prefix: 4,
            id: 3,
            count: 1,
            self_ns: 2_000_000,
        });
        t.nodes.push(Node {
            prefix: 5,
            id: 3,
            count: 1,
            self_ns: 1_000_000,
        });
        t.total_ns = vec![6_000_000, 5_000_000, 4_000_000, 3_000_000];
        t.timer = vec![(0, 0), (3, 30_000_000), (0, 0), (2, 20_000_000)];
        let o = Options::default();
        let m = methods_table(&o, &s);
        assert!(m.contains("methods = 2,"), "{m}");
        assert_eq!(m.matches(" Fib.fib()V\n").count(), 1, "{m}");
        assert!(
            m.contains("   1 80.00% 80.00%          5       8.000       8.000 Fib.fib()V\n"),
            "{m}"
        );
        assert!(
            m.contains("   2 20.00% 100.00%          2       2.000      10.000 Fib.main()V\n"),
            "{m}"
        );
        let h = render(&o, &s);
        assert!(h.contains("CPU TIME (ms) BEGIN (total = 10)"), "{h}");
        assert!(
            h.contains("   1 40.00% 40.00%       3 300001 Fib.fib\n"),
            "{h}"
        );
        assert!(
            h.contains("   2 40.00% 80.00%       2 300002 Fib.fib\n"),
            "{h}"
        );
        assert!(
            h.contains("   3 20.00% 100.00%       2 300003 Fib.main\n"),
            "{h}"
        );
        assert!(!h.contains("300004"), "{h}");
        assert!(h.contains("         5       50.000 Fib.fib()V\n"), "{h}");
        let c = collapsed(&o, &s);
        assert_eq!(
            c, "Fib.main 2000\nFib.main;Fib.fib 4000\nFib.main;Fib.fib;Fib.fib 4000\n",
            "{c}"
        );
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

    /// A deterministic pseudo-random profile: `n` nodes in the first entry (a tree grown at
    /// random, many nodes without counts, self time on a few, ties of count and self), a
    /// second entry sharing paths with it, a third whose nodes repeat (prefix, method) pairs,
    /// method ids beyond the methods known, overloads, timers and mismatches.
    fn random_profile(n: usize) -> Snapshot {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m.max(1)
        };
        let nm = 300u64;
        let methods: Vec<MethodRec> = (0..nm)
            .map(|i| MethodRec {
                class: format!("p/C{}", i % 37),
                name: format!("m{}", i % 101),
                desc: format!("({})V", if i % 3 == 0 { "I" } else { "" }),
                source_file: (i % 11 != 0).then(|| format!("C{}.java", i % 37)),
                first_line: (i % 7 != 0).then_some((i * 13 % 500) as u32),
            })
            .collect();
        let tree = |n: usize, rnd: &mut dyn FnMut(u64) -> u64| {
            let mut nodes = vec![Node {
                prefix: 0,
                id: 0,
                count: 0,
                self_ns: 0,
            }];
            for k in 1..n {
                // mostly a recent node (deep paths), sometimes the root or any node
                let prefix = match rnd(4) {
                    0 => 0,
                    1 => rnd(k as u64),
                    _ => k as u64 - 1 - rnd((k as u64).min(8)),
                } as u32;
                let count = match rnd(5) {
                    0 => 0,
                    1 => 1,
                    _ => rnd(1000),
                };
                let self_ns = match rnd(40) {
                    0 => rnd(5) * 1_000_000,
                    1 => rnd(3_000_000_000),
                    _ => 0,
                };
                nodes.push(Node {
                    prefix,
                    id: rnd(nm + 5) as u32,
                    count,
                    self_ns,
                });
            }
            nodes
        };
        let a = tree(n, &mut rnd);
        // shares the first nodes' paths with a, then grows its own
        let mut b = a[..n / 3].to_vec();
        for nd in b.iter_mut().skip(1) {
            nd.count = rnd(50);
            nd.self_ns = if rnd(10) == 0 { rnd(9) * 1_000_000 } else { 0 };
        }
        let more = tree(n / 4, &mut rnd);
        let off = b.len() as u32;
        for nd in more.into_iter().skip(1) {
            let prefix = if nd.prefix == 0 {
                0
            } else {
                nd.prefix + off - 1
            };
            b.push(Node { prefix, ..nd });
        }
        // repeats (prefix, method) pairs: paths that must be merged within one entry
        let mut c = tree(2000, &mut rnd);
        for k in 1..c.len() {
            if rnd(3) == 0 {
                let j = 1 + rnd(k as u64) as usize;
                if j < k {
                    c[k].prefix = c[j].prefix;
                    c[k].id = c[j].id;
                }
            }
        }
        let entry = |name: &str, nodes: Vec<Node>, mism: u64| ThreadData {
            name: Some(name.into()),
            nodes,
            total_ns: (0..nm).map(|i| i * 1_000_000).collect(),
            mismatches: mism,
            cache_misses: 0,
            slow_enters: 0,
            timer: (0..20).map(|i| (i % 3, i * 12_345)).collect(),
        };
        Snapshot {
            threads: vec![
                entry("main", a, 0),
                entry("worker 1", b, 3),
                entry("worker;2", c, 0),
                entry("idle", Vec::new(), 1),
            ],
            methods,
            date: "Mon Nov 23 09:00:00 2026".into(),
            uninstrumented_early: 3,
            left_classes: vec!["A: bad".into()],
            left_methods: Vec::new(),
            failure: None,
        }
    }

    /// The writer that reads paths from the trees (no per-path allocation, rows selected
    /// before sorting, written as made) writes the same bytes as the writer before it
    /// (report_old.rs) for a large random profile, in every format, per thread or not, with
    /// the default cutoff, none and a larger one, and a collapsed depth.
    #[test]
    fn large_profile_reports_unchanged() {
        let s = random_profile(60_000);
        let mut checked = 0;
        for thread in [false, true] {
            for cutoff in [0.0001, 0.0, 0.01] {
                for lineno in [true, false] {
                    for format in [Format::Hprof, Format::Methods, Format::Collapsed] {
                        let o = Options {
                            thread,
                            cutoff,
                            lineno,
                            format,
                            ..Options::default()
                        };
                        let before = match format {
                            Format::Hprof => {
                                old::hprof(&o, &s)
                                    + &old::methods_table(&o, &s)
                                    + &old::timer_table(&s)
                            }
                            Format::Methods => old::methods_table(&o, &s),
                            Format::Collapsed => old::collapsed(&o, &s),
                        };
                        let now = render(&o, &s);
                        assert!(before.len() > 1000, "{thread} {cutoff} {format:?}");
                        if now != before {
                            let at = now
                                .bytes()
                                .zip(before.bytes())
                                .position(|(a, b)| a != b)
                                .unwrap_or(now.len().min(before.len()));
                            panic!(
                                "thread={thread} cutoff={cutoff} lineno={lineno} {format:?}: \
                                 differs at byte {at}:\nnow:    {:?}\nbefore: {:?}",
                                &now[at.saturating_sub(200)..(at + 200).min(now.len())],
                                &before[at.saturating_sub(200)..(at + 200).min(before.len())]
                            );
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 36);
    }
}
