//! The report writer as it was before reports were written as they are made (commit
//! 82e932a): the reference that `report::tests::large_profile_reports_unchanged` compares the
//! writer with. Tests only.

use super::{clock_description, method_rows, ms, pct, total_self_ns, Snapshot, ThreadData};
use crate::options::Options;
use crate::registry::MethodRec;
use std::collections::HashMap;
use std::fmt::Write;

/// Frames of node `k`, top (callee) first.
fn frames(t: &ThreadData, mut k: usize) -> Vec<u32> {
    let mut f = Vec::new();
    while k != 0 && f.len() < 1024 {
        f.push(t.nodes[k].id);
        k = t.nodes[k].prefix as usize;
    }
    f
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
            let key = (by_thread.then_some(ti), frames(t, k));
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

/// HPROF's text: header, THREAD START records (thread=y), TRACE records, CPU TIME block.
pub(super) fn hprof(o: &Options, s: &Snapshot) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "JAVA PROFILE 1.0.1, created {}", s.date);
    out.push('\n');
    out.push_str("Header for -agentlib:bciagent (exact cpu=times by bytecode instrumentation)\n\n");
    let _ = writeln!(
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
pub(super) fn methods_table(o: &Options, s: &Snapshot) -> String {
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
pub(super) fn timer_table(s: &Snapshot) -> String {
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
pub(super) fn collapsed(o: &Options, s: &Snapshot) -> String {
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
