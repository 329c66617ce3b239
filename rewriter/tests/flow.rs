//! Coverage flow: counters placed by `flow::Plan` determine every block and edge count.
//! Random graphs and random runs check the solver against counts taken by walking the graph;
//! real methods (test-classes compiled by javac, and the JDK image) check that every method
//! gets a complete plan.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::flow::{Block, Cfg, Counter, Edge, EdgeKind, Plan, Site, Split};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random graph shaped like bytecode: blocks in order, the last one never falls through.
fn random_cfg(r: &mut Rng) -> Cfg {
    let n = 2 + r.below(24) as u32;
    let mut blocks = Vec::new();
    let mut edges = Vec::new();
    for b in 0..n {
        blocks.push(Block {
            first: b,
            end: b + 1,
            handler: b > 0 && r.below(8) == 0,
        });
        let last = b + 1 == n;
        let any = |r: &mut Rng| r.below(n as u64) as u32;
        let kind = if last { 3 + r.below(4) } else { r.below(7) };
        match kind {
            0 => edges.push(Edge {
                from: b,
                to: Some(b + 1),
                kind: EdgeKind::Fall,
            }),
            1 => edges.push(Edge {
                from: b,
                to: Some(b + 1),
                kind: EdgeKind::AfterCall,
            }),
            2 => {
                edges.push(Edge {
                    from: b,
                    to: Some(b + 1),
                    kind: EdgeKind::NotTaken,
                });
                let t = any(r);
                edges.push(Edge {
                    from: b,
                    to: Some(t),
                    kind: EdgeKind::Taken,
                });
            }
            3 => {
                let t = any(r);
                edges.push(Edge {
                    from: b,
                    to: Some(t),
                    kind: EdgeKind::Goto,
                });
            }
            4 => {
                let mut ts: Vec<u32> = (0..2 + r.below(3)).map(|_| any(r)).collect();
                ts.sort();
                ts.dedup();
                for (k, t) in ts.into_iter().enumerate() {
                    edges.push(Edge {
                        from: b,
                        to: Some(t),
                        kind: EdgeKind::Switch {
                            keys: vec![k as i32],
                            default: k == 0,
                        },
                    });
                }
            }
            5 => edges.push(Edge {
                from: b,
                to: None,
                kind: EdgeKind::Return,
            }),
            _ => edges.push(Edge {
                from: b,
                to: None,
                kind: EdgeKind::Throw,
            }),
        }
    }
    Cfg::from_parts(blocks, edges)
}

/// What really happened in some runs of a method.
#[derive(Default)]
struct Truth {
    entries: u64,
    blocks: Vec<u64>,
    edges: Vec<u64>,
    handler_arrivals: Vec<u64>,
}

/// Runs the method `runs` times along random edges. A block whose only way on is an
/// `AfterCall` edge, or that has a `Thrown` exit, may throw (the call or an instruction of the
/// block threw) to a handler or out of the method; with `leaks`, any block may also throw (an
/// implicit exception the plan does not model). Runs that do not end within 300 blocks are
/// abandoned (not recorded).
fn walk(cfg: &Cfg, r: &mut Rng, runs: usize, leaks: bool) -> Truth {
    let nb = cfg.blocks.len();
    let handlers: Vec<u32> = (0..nb as u32)
        .filter(|&b| cfg.blocks[b as usize].handler)
        .collect();
    let mut t = Truth {
        blocks: vec![0; nb],
        edges: vec![0; cfg.edges.len()],
        handler_arrivals: vec![0; nb],
        ..Truth::default()
    };
    for _ in 0..runs {
        let mut blocks = vec![0u64; nb];
        let mut edges = vec![0u64; cfg.edges.len()];
        let mut arrivals = vec![0u64; nb];
        let mut b = 0u32;
        let mut done = false;
        for _ in 0..300 {
            blocks[b as usize] += 1;
            let outs = &cfg.out[b as usize];
            let after_call = outs.iter().any(|&e| {
                matches!(
                    cfg.edges[e as usize].kind,
                    EdgeKind::AfterCall | EdgeKind::Thrown
                )
            });
            let throws = (after_call && r.below(5) == 0) || (leaks && r.below(9) == 0);
            if throws {
                // a counted exceptional exit (EdgeKind::Thrown) sees every exception of its block
                if let Some(&e) = outs
                    .iter()
                    .find(|&&e| cfg.edges[e as usize].kind == EdgeKind::Thrown)
                {
                    edges[e as usize] += 1;
                }
                if !handlers.is_empty() && r.below(2) == 0 {
                    let h = handlers[r.below(handlers.len() as u64) as usize];
                    arrivals[h as usize] += 1;
                    b = h;
                    continue;
                }
                done = true;
                break;
            }
            // normal exits only (the exceptional one is taken by throwing, above)
            let normal: Vec<u32> = outs
                .iter()
                .copied()
                .filter(|&e| cfg.edges[e as usize].kind != EdgeKind::Thrown)
                .collect();
            let e = normal[r.below(normal.len() as u64) as usize];
            edges[e as usize] += 1;
            match cfg.edges[e as usize].to {
                Some(to) => {
                    if cfg.blocks[to as usize].handler {
                        arrivals[to as usize] += 1;
                    }
                    b = to;
                }
                None => {
                    done = true;
                    break;
                }
            }
        }
        if done {
            t.entries += 1;
            add(&mut t.blocks, &blocks);
            add(&mut t.handler_arrivals, &arrivals);
            add(&mut t.edges, &edges);
        }
    }
    t
}

fn add(into: &mut [u64], v: &[u64]) {
    into.iter_mut().zip(v).for_each(|(a, b)| *a += b);
}

fn counter_values(plan: &Plan, t: &Truth) -> Vec<u64> {
    plan.counters
        .iter()
        .map(|c| match *c {
            Counter::Entry => t.entries,
            // Counted at the block's start: every arrival.
            Counter::Block(b) => t.blocks[b as usize],
            Counter::Edge(e) => t.edges[e as usize],
        })
        .collect()
}

#[test]
fn random_graphs_exact_when_only_calls_throw() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut counters = 0usize;
    let mut bound = 0usize;
    for _ in 0..3000 {
        let cfg = random_cfg(&mut r);
        let plan = Plan::new(&cfg);
        assert!(plan.is_complete(&cfg), "incomplete plan for {cfg:?}");
        for i in 0..plan.counters.len() {
            assert!(plan.site(&cfg, i).is_some());
        }
        let t = walk(&cfg, &mut r, 20, false);
        let got = plan.solve(&cfg, &counter_values(&plan, &t));
        // Unreachable blocks may stay unknown (0); reachable ones must be exact.
        assert_eq!(got.blocks, t.blocks, "blocks of {cfg:?}\nplan {plan:?}");
        assert_eq!(got.edges, t.edges, "edges of {cfg:?}\nplan {plan:?}");
        counters += plan.counters.len();
        let after_calls = cfg
            .edges
            .iter()
            .filter(|e| e.kind == EdgeKind::AfterCall)
            .count();
        let handlers = cfg.blocks.iter().filter(|b| b.handler).count();
        // Ball-Larus: E - N + 1 counters (E counting exits); ours adds the forced ones.
        bound += (cfg.edges.len() + 1).saturating_sub(cfg.blocks.len()) + after_calls + handlers;
    }
    println!("counters {counters}, bound {bound}");
    assert!(
        counters <= bound + bound / 10,
        "{counters} counters against ~{bound}"
    );
}

/// Walks `cfg` with implicit exceptions (20 runs) and checks the plan's solution never counts
/// a block below what ran (and, with `branches`, measured branch edges exactly); returns how
/// many blocks it over-counted.
fn walk_never_undercounts(cfg: &Cfg, r: &mut Rng, branches: bool) -> usize {
    let plan = Plan::new(cfg);
    let t = walk(cfg, r, 20, true);
    let got = plan.solve(cfg, &counter_values(&plan, &t));
    let mut over = 0;
    for b in 0..cfg.blocks.len() {
        assert!(
            got.blocks[b] >= t.blocks[b],
            "block {b}: {} < {} in {cfg:?}\nplan {plan:?}",
            got.blocks[b],
            t.blocks[b]
        );
        over += (got.blocks[b] > t.blocks[b]) as usize;
    }
    if branches {
        for (e, edge) in cfg.edges.iter().enumerate() {
            if edge.kind.is_branch() && plan.edge_counter[e].is_some() {
                assert_eq!(got.edges[e], t.edges[e], "measured branch edge {e}");
            }
        }
    }
    over
}

#[test]
fn random_graphs_never_undercount_with_implicit_exceptions() {
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    let mut over = 0;
    for _ in 0..3000 {
        let cfg = random_cfg(&mut r);
        over += walk_never_undercounts(&cfg, &mut r, true);
    }
    // The test must be able to see the over-count it allows.
    assert!(over > 0, "no run threw implicitly");
}

/// `cfg` with an [`EdgeKind::Thrown`] exit added to every block that ends in a call (what
/// `Cfg::build` gives such blocks where a handler can catch), except every `keep`-th one (a
/// constructor's calls before super()), and to every other block that falls through (what
/// `Cfg::build_method` gives a block that ends after an instruction that throws implicitly).
fn with_thrown_exits(cfg: &Cfg, keep: usize) -> Cfg {
    let mut edges = cfg.edges.clone();
    let (mut n, mut falls) = (0, 0);
    for e in &cfg.edges {
        if e.kind == EdgeKind::Fall {
            falls += 1;
            if falls % 2 == 0 {
                edges.push(Edge {
                    from: e.from,
                    to: None,
                    kind: EdgeKind::Thrown,
                });
            }
        }
        if e.kind == EdgeKind::AfterCall {
            n += 1;
            if keep == 0 || n % keep != 0 {
                edges.push(Edge {
                    from: e.from,
                    to: None,
                    kind: EdgeKind::Thrown,
                });
            }
        }
    }
    Cfg::from_parts(cfg.blocks.clone(), edges)
}

#[test]
fn random_graphs_with_counted_exits_exact_when_only_calls_throw() {
    let mut r = Rng(0x1234_5678_9abc_def1);
    let (mut exits, mut after, mut falls) = (0usize, 0usize, 0usize);
    for k in 0..3000 {
        let cfg = with_thrown_exits(&random_cfg(&mut r), k % 4);
        let plan = Plan::new(&cfg);
        assert!(plan.is_complete(&cfg), "incomplete plan for {cfg:?}");
        for (i, c) in plan.counters.iter().enumerate() {
            let site = plan.site(&cfg, i);
            // the instrumenter has trampolines for switch cases only
            if let Some(Site::Trampoline(e)) = site {
                assert!(
                    matches!(cfg.edges[e as usize].kind, EdgeKind::Switch { .. }),
                    "trampoline on edge {e} of {cfg:?}\nplan {plan:?}"
                );
            }
            if let Counter::Edge(e) = c {
                let from = cfg.edges[*e as usize].from as usize;
                if cfg.edges[*e as usize].kind == EdgeKind::Fall && cfg.out[from].len() > 1 {
                    // the edge on from a block that may throw implicitly, counted (a cycle): at
                    // the start of its target, or after the block's last instruction
                    let to = cfg.edges[*e as usize].to.unwrap();
                    let after = Site::After(cfg.blocks[from].end - 1);
                    let before = Site::Before(cfg.blocks[to as usize].first);
                    assert!(site == Some(after) || site == Some(before), "{site:?}");
                    falls += (site == Some(after)) as usize;
                }
                match cfg.edges[*e as usize].kind {
                    EdgeKind::Thrown => {
                        assert_eq!(site, Some(Site::Thrown(cfg.edges[*e as usize].from)));
                        exits += 1;
                    }
                    EdgeKind::AfterCall => after += 1,
                    _ => {}
                }
            }
        }
        let t = walk(&cfg, &mut r, 20, false);
        let got = plan.solve(&cfg, &counter_values(&plan, &t));
        assert_eq!(got.blocks, t.blocks, "blocks of {cfg:?}\nplan {plan:?}");
        assert_eq!(got.edges, t.edges, "edges of {cfg:?}\nplan {plan:?}");
    }
    // both kinds were planned: exits counted by handlers, edges after calls without one, and
    // edges on from blocks with an exit, counted after their last instruction
    assert!(
        exits > 1000 && after > 100 && falls > 10,
        "{exits} exits, {after} after-call counters, {falls} counted edges after a block with an exit"
    );
}

#[test]
fn random_graphs_with_counted_exits_never_undercount_with_implicit_exceptions() {
    let mut r = Rng(0x0fed_cba9_8765_4321);
    let mut over = 0;
    for k in 0..3000 {
        let cfg = with_thrown_exits(&random_cfg(&mut r), k % 4);
        over += walk_never_undercounts(&cfg, &mut r, false);
    }
    assert!(over > 0, "no run threw implicitly");
}

/// The counters of whole calls are consistent (`Plan::consistent`): random graphs, with and
/// without counted exits, with and without implicit exceptions the plan does not model (an
/// exception out of a block leaves it by fewer exits than arrived, which is no contradiction).
#[test]
fn random_graphs_whole_calls_are_consistent() {
    let mut r = Rng(0x5851_f42d_4c95_7f2d);
    for k in 0..4000 {
        let cfg = random_cfg(&mut r);
        let cfg = if k % 2 == 0 {
            with_thrown_exits(&cfg, k % 4)
        } else {
            cfg
        };
        let plan = Plan::new(&cfg);
        let t = walk(&cfg, &mut r, 20, k % 3 == 0);
        assert!(
            plan.consistent(&cfg, &counter_values(&plan, &t)),
            "whole calls inconsistent: {cfg:?}\nplan {plan:?}"
        );
        assert!(plan.consistent(&cfg, &vec![0; plan.counters.len()]));
    }
}

/// Counters of part of a call are not consistent where the solution would have to clamp: an
/// `if` whose measured outcome counted more than the method was entered (a window that began
/// after the entry), or a block left by more than arrived.
#[test]
fn part_of_a_call_is_inconsistent() {
    // block 0: if, not taken to block 1, taken to block 2; blocks 1 and 2 return
    let block = |b: u32| Block {
        first: b,
        end: b + 1,
        handler: false,
    };
    let ret = |b: u32| Edge {
        from: b,
        to: None,
        kind: EdgeKind::Return,
    };
    let cfg = Cfg::from_parts(
        vec![block(0), block(1), block(2)],
        vec![
            Edge {
                from: 0,
                to: Some(1),
                kind: EdgeKind::NotTaken,
            },
            Edge {
                from: 0,
                to: Some(2),
                kind: EdgeKind::Taken,
            },
            ret(1),
            ret(2),
        ],
    );
    let plan = Plan::new(&cfg);
    let measured: Vec<usize> = (plan.counters.iter())
        .enumerate()
        .filter(|(_, c)| matches!(c, Counter::Edge(0 | 1)))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(measured.len(), 1, "{plan:?}");
    let entry = plan
        .counters
        .iter()
        .position(|c| *c == Counter::Entry)
        .unwrap();
    let values = |entries: u64, outcome: u64| {
        let mut v = vec![0; plan.counters.len()];
        v[entry] = entries;
        v[measured[0]] = outcome;
        v
    };
    assert!(plan.consistent(&cfg, &values(2, 1)));
    assert!(plan.consistent(&cfg, &values(2, 2)));
    assert!(!plan.consistent(&cfg, &values(0, 1)));
    assert!(!plan.consistent(&cfg, &values(1, 2)));
}

/// A method: its path, code bytes, instructions and exception table.
type Method = (String, Vec<u8>, Vec<bci::Insn>, Vec<bci::Handler>);

fn methods_of(bytes: &[u8]) -> Vec<Method> {
    let cf = bci::ClassFile::parse(bytes).unwrap();
    let mut out = Vec::new();
    for m in &cf.methods {
        let Some((_, a)) = cf.find_attr(&m.attributes, "Code") else {
            continue;
        };
        let code = bci::CodeAttr::parse(&cf, a).unwrap();
        let insns = code.decode_all().unwrap();
        out.push((
            cf.method_path(m),
            code.code.to_vec(),
            insns,
            code.handlers.clone(),
        ));
    }
    out
}

fn check_method(
    path: &str,
    code: &[u8],
    insns: &[bci::Insn],
    handlers: &[bci::Handler],
) -> (usize, usize) {
    let cfg = match Cfg::build(code, insns, handlers, Split::AfterCalls) {
        Ok(c) => c,
        Err(e) => {
            assert!(
                insns.iter().any(|i| matches!(i.opcode, 0xa8 | 0xa9 | 0xc9)),
                "{path}: {e}"
            );
            return (0, 0);
        }
    };
    let plan = Plan::new(&cfg);
    assert!(plan.is_complete(&cfg), "{path}: incomplete plan");
    // Blocks tile the code; every edge's target is a block start.
    assert_eq!(cfg.blocks[0].first, 0, "{path}");
    for w in cfg.blocks.windows(2) {
        assert_eq!(w[0].end, w[1].first, "{path}");
    }
    assert_eq!(
        cfg.blocks.last().unwrap().end as usize,
        insns.len(),
        "{path}"
    );
    let mut trampolines = 0;
    for i in 0..plan.counters.len() {
        if let Some(Site::Trampoline(e)) = plan.site(&cfg, i) {
            if std::env::var("FLOW_DEBUG").is_ok() {
                let ed = &cfg.edges[e as usize];
                println!(
                    "{path}: trampoline {:?} outs {}",
                    ed.kind,
                    cfg.out[ed.from as usize].len()
                );
            }
            trampolines += 1;
        }
    }
    (plan.counters.len(), trampolines)
}

#[test]
fn test_classes_get_complete_plans() {
    let ws = common::workspace();
    let dir = ws.join(format!("target/flow-test-classes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sources: Vec<_> = std::fs::read_dir(ws.join("test-classes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "java"))
        .collect();
    let st = std::process::Command::new(common::java_home().join("bin/javac"))
        .arg("-g")
        .arg("-d")
        .arg(&dir)
        .args(&sources)
        .status()
        .unwrap();
    assert!(st.success(), "javac failed");
    let mut methods = 0;
    for p in common::class_files(&dir) {
        let bytes = std::fs::read(&p).unwrap();
        for (path, code, insns, handlers) in methods_of(&bytes) {
            check_method(&path, &code, &insns, &handlers);
            methods += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(methods > 50, "only {methods} methods compiled");
}

#[test]
fn jdk_methods_get_complete_plans() {
    let root = common::jdk_corpus();
    let (mut methods, mut counters, mut trampolines, mut insns_total) = (0, 0, 0, 0);
    let (mut planned, mut exits) = (0, 0);
    for p in common::class_files(&root) {
        let bytes = std::fs::read(&p).unwrap();
        for (path, code, insns, handlers) in methods_of(&bytes) {
            let (c, t) = check_method(&path, &code, &insns, &handlers);
            methods += 1;
            counters += c;
            trampolines += t;
            insns_total += insns.len();
        }
        // coverage's plans (blocks also end after instructions that throw implicitly, by the
        // line table): complete, with trampolines on switch cases only (the instrumenter has
        // no other), and exits after such instructions
        let Ok(cov) = bci_rewriter::coverage::plan_class(&bytes, Split::AfterCalls) else {
            continue;
        };
        for m in &cov.methods {
            let (cfg, plan) = (&m.cfg, &m.plan);
            assert!(
                plan.is_complete(cfg),
                "{}.{}: incomplete plan",
                cov.name,
                m.name
            );
            for i in 0..plan.counters.len() {
                match plan.site(cfg, i) {
                    Some(Site::Trampoline(e)) => assert!(
                        matches!(cfg.edges[e as usize].kind, EdgeKind::Switch { .. }),
                        "{}.{}: trampoline on {:?}",
                        cov.name,
                        m.name,
                        cfg.edges[e as usize]
                    ),
                    Some(Site::Thrown(b)) => {
                        let last = cfg.out[b as usize]
                            .iter()
                            .any(|&e| cfg.edges[e as usize].kind == EdgeKind::Fall);
                        exits += last as usize;
                    }
                    _ => {}
                }
            }
            planned += 1;
        }
    }
    println!(
        "{methods} methods, {insns_total} instructions: {counters} counters ({trampolines} on trampolines); \
         coverage: {planned} methods, {exits} exits after implicit throws"
    );
    assert!(methods > 100_000, "only {methods} JDK methods");
    assert!(
        planned > 100_000 && exits > 10_000,
        "{planned} planned, {exits} exits"
    );
}
