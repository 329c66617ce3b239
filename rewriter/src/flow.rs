//! Where coverage counters go: the control flow of one method (basic blocks and edges), a
//! counter plan that fixes every block and branch count, and the solver that turns counter
//! values back into those counts.
//!
//! Counters sit on edges, as in Ball & Larus ("Optimally profiling and tracing programs", 1994):
//! a method with `E` edges and `N` blocks needs about `E - N + 1` of them. Unlike their spanning
//! tree, every count here is derived *forwards* only:
//!
//! * a block's count is the sum of its incoming edges (plus the method entries for the first
//!   block; a handler's count is measured at its start, since exceptions reach it from anywhere);
//! * an edge that carries no counter is its source block's count minus the block's other
//!   outgoing edges, which all carry counters.
//!
//! Why forwards: an exception the plan does not model (an implicit `NullPointerException`,
//! `ArithmeticException`, …, or a call that throws when calls do not split blocks) leaves a
//! block without taking any of its edges. Derived forwards, such a loss can only make the
//! blocks *after* the throw look run once more; a block that ran is never reported missed.
//! (A spanning tree also derives backwards, and the same loss can then make code that ran
//! count zero.) With [`Split::AfterCalls`], every call ends a block, and the block gets a
//! second way out besides the edge after the call: an [`EdgeKind::Thrown`] edge, its
//! exceptional exit (Ball & Larus's exceptional edges made counted edges). That edge carries a
//! counter the method's exception handlers bump (see `coverage`: the block keeps its counter's
//! number in a local, read only when an exception passes), so the normal path after a call
//! touches no memory and its count is the block's minus the exits by exception: exact for
//! exceptions thrown by the call and by any instruction of its block. Where no handler can
//! catch (a constructor before its super()/this() call), the edge after the call carries the
//! counter instead, as before.
//!
//! Instructions that throw implicitly in the normal run of a program (division by zero, an
//! array index out of bounds, a field access on null, a failed cast …: [`throws_implicitly`])
//! end a block the same way ([`Cfg::build_method`] with [`Implicit`]: the source line of each
//! instruction), where code of another line or a jump follows them in the block before the
//! next such instruction or call of their line: the block gets a counted [`EdgeKind::Thrown`]
//! exit besides the [`EdgeKind::Fall`] into the code after it. So a line after an implicit
//! exception, and a branch that follows it, count exactly; what such an exception can still
//! make count once more is the rest of its own line (up to its next such instruction or call,
//! or the end of a block that returns) and what follows instructions only linkage, class
//! initialization or the machine make throw (`new`, `getstatic` …).
//!
//! The plan is a pure function of the method's code: the agent and the offline instrumenter
//! number counters identically, and the report can solve counts from the class bytes alone.

use bci::code::{Handler, Insn};
use bci::opcodes::{op, Flow};
use bci::{Error, ErrorKind, Result};

/// Where blocks are split besides jumps, jump targets and handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Only control flow splits blocks: a call that throws makes the rest of its block, and
    /// the blocks derived from it, count as run.
    None,
    /// Every call (invoke*) ends a block with two ways out: the edge after the call and an
    /// [`EdgeKind::Thrown`] exit counted by the method's handlers (or, where no handler can
    /// catch, a counter on the edge after the call): exceptions thrown by calls are counted
    /// exactly. With [`Implicit`] ([`Cfg::build_method`]) so are those of instructions that
    /// throw implicitly, up to the rest of their line.
    AfterCalls,
}

/// How control leaves a block along an edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EdgeKind {
    /// Falls into the next block (no jump).
    Fall,
    /// Falls into the next block after a call (split by [`Split::AfterCalls`]).
    AfterCall,
    Goto,
    /// A conditional jump taken.
    Taken,
    /// A conditional jump not taken (falls through).
    NotTaken,
    /// A switch going to one target: the keys that lead there, and whether the default does.
    Switch {
        keys: Vec<i32>,
        default: bool,
    },
    /// A return instruction (to the method's exit).
    Return,
    /// athrow (to a handler or out of the method; not followed).
    Throw,
    /// The block's call, or an instruction before it in the block, threw (to a handler or out
    /// of the method; not followed): the exceptional exit of a block that ends in a call
    /// ([`Split::AfterCalls`]) or that may throw implicitly ([`Cfg::build_method`]), counted
    /// by the method's handlers ([`Site::Thrown`]).
    Thrown,
}

impl EdgeKind {
    /// True for the outcomes a branch counter reports (if and switch).
    pub fn is_branch(&self) -> bool {
        matches!(
            self,
            EdgeKind::Taken | EdgeKind::NotTaken | EdgeKind::Switch { .. }
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    pub from: u32,
    /// The block entered; `None` when the edge leaves the method (return, athrow).
    pub to: Option<u32>,
    pub kind: EdgeKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Index of the first instruction (into the method's decoded instructions).
    pub first: u32,
    /// One past the last instruction.
    pub end: u32,
    /// An exception handler starts here.
    pub handler: bool,
}

/// The control-flow graph of one method. Block 0 is the entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cfg {
    pub blocks: Vec<Block>,
    pub edges: Vec<Edge>,
    /// Per block: its outgoing edges (indices into `edges`), in instruction order.
    pub out: Adjacency,
    /// Per block: its incoming edges.
    pub ins: Adjacency,
}

/// Edge lists by block in one array (`cfg.out[b]` is block `b`'s slice): two allocations per
/// graph instead of two per block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Adjacency {
    /// Block `b`'s edges are `items[start[b]..start[b + 1]]`.
    start: Vec<u32>,
    items: Vec<u32>,
}

impl Adjacency {
    /// The lists of `n` blocks: edge `e` goes in the list of `key(e)` (if any), in order.
    fn new(n: usize, m: usize, key: impl Fn(usize) -> Option<u32>) -> Adjacency {
        let mut start = vec![0u32; n + 1];
        for e in 0..m {
            if let Some(b) = key(e) {
                start[b as usize + 1] += 1;
            }
        }
        for b in 0..n {
            start[b + 1] += start[b];
        }
        let mut fill = start.clone();
        let mut items = vec![0u32; start[n] as usize];
        for e in 0..m {
            if let Some(b) = key(e) {
                items[fill[b as usize] as usize] = e as u32;
                fill[b as usize] += 1;
            }
        }
        Adjacency { start, items }
    }
    /// The number of blocks.
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Each block's list, in block order.
    pub fn iter(&self) -> AdjacencyIter<'_> {
        AdjacencyIter { adj: self, b: 0 }
    }
}

/// [`Adjacency::iter`].
pub struct AdjacencyIter<'a> {
    adj: &'a Adjacency,
    b: usize,
}

impl<'a> Iterator for AdjacencyIter<'a> {
    type Item = &'a [u32];
    fn next(&mut self) -> Option<&'a [u32]> {
        (self.b < self.adj.len()).then(|| {
            self.b += 1;
            &self.adj[self.b - 1]
        })
    }
}

impl std::ops::Index<usize> for Adjacency {
    type Output = [u32];
    fn index(&self, b: usize) -> &[u32] {
        &self.items[self.start[b] as usize..self.start[b + 1] as usize]
    }
}

impl<'a> IntoIterator for &'a Adjacency {
    type Item = &'a [u32];
    type IntoIter = AdjacencyIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Whether an instruction can throw (conservative): everything but constants, local loads and
/// stores, stack shuffles, arithmetic other than integer division, conversions, compares,
/// jumps, switches and returns. Where such an instruction runs, the exit local of the
/// coverage code must name the running block's exceptional exit or [`crate::coverage::LOST`].
pub fn may_throw(opcode: u8) -> bool {
    let quiet = matches!(opcode,
        op::NOP..=op::SIPUSH
            | op::ILOAD..=op::ALOAD_3
            | op::ISTORE..=op::ASTORE_3
            | op::POP..=op::RETURN
            | op::IFNULL..=op::GOTO_W
            | op::WIDE);
    !quiet || matches!(opcode, op::IDIV | op::LDIV | op::IREM | op::LREM)
}

/// Whether an instruction that is not a call throws in the normal run of a program: integer
/// division and remainder (ArithmeticException), array loads and stores (NullPointerException,
/// ArrayIndexOutOfBoundsException, ArrayStoreException), `arraylength`, `getfield` and
/// `putfield` (NullPointerException), `checkcast` (ClassCastException), array creation
/// (NegativeArraySizeException), `monitorenter`/`monitorexit`. The plan counts the exceptions
/// of these ([`Implicit`]); it leaves out those only linkage, class initialization or the
/// machine can throw (`new`, `getstatic`, `ldc`, `instanceof` …: NoClassDefFoundError,
/// ExceptionInInitializerError, OutOfMemoryError).
pub fn throws_implicitly(opcode: u8) -> bool {
    matches!(
        opcode,
        op::IDIV
            | op::LDIV
            | op::IREM
            | op::LREM
            | op::IALOAD..=op::SALOAD
            | op::IASTORE..=op::SASTORE
            | op::ARRAYLENGTH
            | op::GETFIELD
            | op::PUTFIELD
            | op::CHECKCAST
            | op::NEWARRAY
            | op::ANEWARRAY
            | op::MULTIANEWARRAY
            | op::MONITORENTER
            | op::MONITOREXIT
    )
}

/// What splits a method's blocks besides control flow and calls ([`Cfg::build_method`]): per
/// instruction, its source line (`None` where the LineNumberTable gives none, or without one)
/// and whether it throws an exception the plan counts (typically [`throws_implicitly`], less
/// what the caller can tell cannot throw: a field of `this` …).
#[derive(Clone, Copy, Debug)]
pub struct Implicit<'a> {
    pub lines: &'a [Option<u32>],
    pub throws: &'a [bool],
}

fn is_call(opcode: u8) -> bool {
    matches!(
        opcode,
        op::INVOKEVIRTUAL | op::INVOKESPECIAL | op::INVOKESTATIC | op::INVOKEINTERFACE
    ) || opcode == op::INVOKEDYNAMIC
}

fn err(msg: String) -> Error {
    Error::new(ErrorKind::Edit, msg)
}

impl Cfg {
    /// Builds the graph of a method's code. `insns` are the decoded instructions of `code`
    /// (in order); `handlers` its exception table. Methods with `jsr`/`ret` (class files
    /// before version 50) are refused. For a constructor use [`Cfg::build_ctor`].
    pub fn build(code: &[u8], insns: &[Insn], handlers: &[Handler], split: Split) -> Result<Cfg> {
        Cfg::build_ctor(code, insns, handlers, split, &[])
    }

    /// [`Cfg::build`] for a constructor whose super()/this() calls (invokespecial `<init>` on
    /// the uninitialized `this`) are instructions `super_calls`: no handler may cover code
    /// before them, so the call blocks there get no [`EdgeKind::Thrown`] exit (the edge after
    /// the call is counted instead).
    pub fn build_ctor(
        code: &[u8],
        insns: &[Insn],
        handlers: &[Handler],
        split: Split,
        super_calls: &[usize],
    ) -> Result<Cfg> {
        Cfg::build_method(code, insns, handlers, split, super_calls, None)
    }

    /// [`Cfg::build_ctor`] that, with [`Split::AfterCalls`] and `implicit`, also ends a block
    /// after an instruction that throws implicitly (`implicit.throws`) where code of another
    /// line, or a jump, follows it in the block before the next such instruction or call of
    /// its line: the block gets an [`EdgeKind::Thrown`] exit besides the edge to the code
    /// after it, as a call's block does, so the code after it counts exactly. The rest of a
    /// line after such an instruction (up to its next one) counts as run when the instruction
    /// throws; so does the rest of a block that ends in a return or athrow on the same line.
    pub fn build_method(
        code: &[u8],
        insns: &[Insn],
        handlers: &[Handler],
        split: Split,
        super_calls: &[usize],
        implicit: Option<&Implicit<'_>>,
    ) -> Result<Cfg> {
        let n = insns.len();
        if n == 0 {
            return Err(err("empty code".into()));
        }
        let index_of = |pc: i64| -> Result<usize> {
            if pc < 0 {
                return Err(err(format!("jump to negative offset {pc}")));
            }
            insns
                .binary_search_by_key(&(pc as u64), |i| i.pc as u64)
                .map_err(|_| err(format!("jump to {pc}, not an instruction start")))
        };
        let mut leader = vec![false; n + 1];
        let mut is_handler = vec![false; n];
        leader[0] = true;
        leader[n] = true;
        for h in handlers {
            let k = index_of(h.handler as i64)?;
            leader[k] = true;
            is_handler[k] = true;
        }
        for (k, i) in insns.iter().enumerate() {
            match i.flow() {
                Flow::Jsr | Flow::Ret => {
                    return Err(err(format!(
                        "{} at {}: subroutines are not supported",
                        bci::opcodes::mnemonic(i.opcode),
                        i.pc
                    )))
                }
                Flow::Cond | Flow::Goto | Flow::Switch => {
                    let mut bad = None;
                    i.for_each_target(code, |t| match index_of(t) {
                        Ok(j) => leader[j] = true,
                        Err(e) => bad = Some(e),
                    });
                    if let Some(e) = bad {
                        return Err(e);
                    }
                    leader[k + 1] = true;
                }
                Flow::Return | Flow::Throw => leader[k + 1] = true,
                Flow::Next => {
                    if split == Split::AfterCalls && is_call(i.opcode) {
                        leader[k + 1] = true;
                    }
                }
            }
        }
        let implicit = implicit
            .filter(|x| split == Split::AfterCalls && x.lines.len() == n && x.throws.len() == n);
        if let Some(x) = implicit {
            split_after_throws(insns, x, &mut leader);
        }
        let mut block_of = vec![u32::MAX; n];
        let mut blocks = Vec::new();
        let mut start = 0;
        for k in 1..=n {
            if leader[k] {
                let b = blocks.len() as u32;
                block_of[start..k].iter_mut().for_each(|x| *x = b);
                blocks.push(Block {
                    first: start as u32,
                    end: k as u32,
                    handler: is_handler[start],
                });
                start = k;
            }
        }
        let uncaught = uncaught_blocks(
            code,
            &blocks,
            &block_of,
            insns,
            handlers,
            super_calls,
            index_of,
        )?;
        let mut edges = Vec::new();
        let block_at = |pc: i64| -> Result<u32> { Ok(block_of[index_of(pc)?]) };
        for (b, blk) in blocks.iter().enumerate() {
            let b = b as u32;
            let last = &insns[blk.end as usize - 1];
            let next = (blk.end as usize) < n;
            let next_block = || -> Result<u32> {
                if next {
                    Ok(block_of[blk.end as usize])
                } else {
                    Err(err(format!("code falls off its end after {}", last.pc)))
                }
            };
            let pc = last.pc as i64;
            match last.flow() {
                Flow::Next => {
                    let kind = if split == Split::AfterCalls && is_call(last.opcode) {
                        EdgeKind::AfterCall
                    } else {
                        EdgeKind::Fall
                    };
                    // a block that may end by an exception its code throws implicitly has
                    // that exit counted too (split_after_throws ends such blocks after the
                    // instruction)
                    let throws = implicit.is_some_and(|x| {
                        x.throws[blk.first as usize..blk.end as usize]
                            .iter()
                            .any(|&t| t)
                    });
                    edges.push(Edge {
                        from: b,
                        to: Some(next_block()?),
                        kind: kind.clone(),
                    });
                    if (kind == EdgeKind::AfterCall || throws) && !uncaught[b as usize] {
                        edges.push(Edge {
                            from: b,
                            to: None,
                            kind: EdgeKind::Thrown,
                        });
                    }
                }
                Flow::Cond => {
                    let off = last.branch_offset(code).unwrap_or(0) as i64;
                    // Not taken first: instruction order of the two outcomes.
                    edges.push(Edge {
                        from: b,
                        to: Some(next_block()?),
                        kind: EdgeKind::NotTaken,
                    });
                    edges.push(Edge {
                        from: b,
                        to: Some(block_at(pc + off)?),
                        kind: EdgeKind::Taken,
                    });
                }
                Flow::Goto => {
                    let off = last.branch_offset(code).unwrap_or(0) as i64;
                    edges.push(Edge {
                        from: b,
                        to: Some(block_at(pc + off)?),
                        kind: EdgeKind::Goto,
                    });
                }
                Flow::Switch => {
                    let (default, cases) = last
                        .switch(code)
                        .ok_or_else(|| err(format!("bad switch at {}", last.pc)))?;
                    // One edge per distinct target, in order of first appearance (cases, then
                    // the default).
                    let mut targets: Vec<(u32, Vec<i32>, bool)> = Vec::new();
                    for (key, off) in cases {
                        let t = block_at(pc + off as i64)?;
                        match targets.iter_mut().find(|x| x.0 == t) {
                            Some(x) => x.1.push(key),
                            None => targets.push((t, vec![key], false)),
                        }
                    }
                    let t = block_at(pc + default as i64)?;
                    match targets.iter_mut().find(|x| x.0 == t) {
                        Some(x) => x.2 = true,
                        None => targets.push((t, Vec::new(), true)),
                    }
                    for (t, keys, default) in targets {
                        edges.push(Edge {
                            from: b,
                            to: Some(t),
                            kind: EdgeKind::Switch { keys, default },
                        });
                    }
                }
                Flow::Return => edges.push(Edge {
                    from: b,
                    to: None,
                    kind: EdgeKind::Return,
                }),
                Flow::Throw => edges.push(Edge {
                    from: b,
                    to: None,
                    kind: EdgeKind::Throw,
                }),
                Flow::Jsr | Flow::Ret => unreachable!("refused above"),
            }
        }
        Ok(Cfg::from_parts(blocks, edges))
    }

    /// A graph from its parts (tests, and callers with their own blocks); fills `out`/`ins`.
    pub fn from_parts(blocks: Vec<Block>, edges: Vec<Edge>) -> Cfg {
        let out = Adjacency::new(blocks.len(), edges.len(), |e| Some(edges[e].from));
        let ins = Adjacency::new(blocks.len(), edges.len(), |e| edges[e].to);
        Cfg {
            blocks,
            edges,
            out,
            ins,
        }
    }

    /// The block holding instruction `k`.
    pub fn block_of(&self, k: u32) -> Option<u32> {
        let i = self.blocks.partition_point(|b| b.end <= k);
        (i < self.blocks.len() && self.blocks[i].first <= k).then_some(i as u32)
    }
}

/// Ends blocks after instructions that throw implicitly ([`Cfg::build_method`]): after
/// instruction `k` unless the block ends there anyway, or the instructions after it up to
/// the next one that throws (implicitly or by a call) are all of `k`'s line, or they all are
/// up to the end of a block that leaves the method (return, athrow). `leader` are the
/// block starts so far (control flow, calls; `leader[n]` set).
fn split_after_throws(insns: &[Insn], x: &Implicit<'_>, leader: &mut [bool]) {
    let n = insns.len();
    for k in 0..n.saturating_sub(1) {
        if !x.throws[k] || leader[k + 1] {
            continue;
        }
        let line = x.lines[k];
        let mut j = k + 1;
        let split = loop {
            if leader[j] {
                // the rest of the block is of k's line: split unless it leaves the method
                break !matches!(insns[j - 1].flow(), Flow::Return | Flow::Throw);
            }
            if x.lines[j] != line {
                break true;
            }
            if x.throws[j] || is_call(insns[j].opcode) {
                // the next one on the same line ends this one's stretch
                break false;
            }
            j += 1;
        };
        if split {
            leader[k + 1] = true;
        }
    }
}

/// The blocks of a constructor no handler may cover: those reached from the entry before a
/// super()/this() call (`super_calls`, instruction indices), the blocks ending in that call
/// included (the catch-all starts after it), and handlers of code among them.
fn uncaught_blocks(
    code: &[u8],
    blocks: &[Block],
    block_of: &[u32],
    insns: &[Insn],
    handlers: &[Handler],
    super_calls: &[usize],
    index_of: impl Fn(i64) -> Result<usize>,
) -> Result<Vec<bool>> {
    let mut out = vec![false; blocks.len()];
    if super_calls.is_empty() {
        return Ok(out);
    }
    let mut handler_blocks = Vec::with_capacity(handlers.len());
    for h in handlers {
        handler_blocks.push((
            h.start as u32,
            h.end as u32,
            block_of[index_of(h.handler as i64)?],
        ));
    }
    let mut work = vec![0u32];
    while let Some(b) = work.pop() {
        if std::mem::replace(&mut out[b as usize], true) {
            continue;
        }
        let blk = &blocks[b as usize];
        for i in &insns[blk.first as usize..blk.end as usize] {
            for &(s, e, hb) in &handler_blocks {
                if s <= i.pc && i.pc < e {
                    work.push(hb);
                }
            }
        }
        let last = blk.end as usize - 1;
        if super_calls.contains(&last) {
            continue;
        }
        // successors by control flow: the next block and jump targets
        let i = &insns[last];
        if !matches!(
            i.flow(),
            Flow::Goto | Flow::Return | Flow::Throw | Flow::Switch
        ) && (blk.end as usize) < insns.len()
        {
            work.push(block_of[blk.end as usize]);
        }
        let mut bad = None;
        i.for_each_target(code, |t| match index_of(t) {
            Ok(j) => work.push(block_of[j]),
            Err(e) => bad = Some(e),
        });
        if let Some(e) = bad {
            return Err(e);
        }
    }
    Ok(out)
}

/// What one counter counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    /// Entries into the method.
    Entry,
    /// Arrivals at a block (exceptional or not): handlers, and loop blocks whose edges would
    /// need trampolines.
    Block(u32),
    /// Times an edge was taken.
    Edge(u32),
}

/// Where the code that bumps a counter goes (instruction indices of the method).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// Once at method entry (jumps back to the first instruction do not run it).
    Entry,
    /// Before instruction `k`; jumps to `k` run it too.
    Before(u32),
    /// After instruction `k` when it falls through.
    After(u32),
    /// On edge `e` only: the jump is sent to a trampoline that counts and jumps on.
    Trampoline(u32),
    /// The exceptional exit of block `b` (an [`EdgeKind::Thrown`] edge): counted by the
    /// method's exception handlers, from a local the block sets to the counter's number.
    Thrown(u32),
}

/// The counters of one method, in id order (counter `i` is the method's `i`-th probe).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub counters: Vec<Counter>,
    /// Per edge: `Some(i)` when counter `i` measures it.
    pub edge_counter: Vec<Option<u32>>,
}

impl Plan {
    /// Chooses the counters for a graph.
    pub fn new(cfg: &Cfg) -> Plan {
        let ne = cfg.edges.len();
        let mut measured = vec![false; ne];
        for outs in &cfg.out {
            // A call's exceptional exit is counted (by the handlers); where a call has none
            // (no handler can catch there), the edge after it is.
            let thrown = outs
                .iter()
                .any(|&e| cfg.edges[e as usize].kind == EdgeKind::Thrown);
            for &e in outs {
                match cfg.edges[e as usize].kind {
                    EdgeKind::Thrown => measured[e as usize] = true,
                    EdgeKind::AfterCall if !thrown => measured[e as usize] = true,
                    _ => {}
                }
            }
            // Of several outcomes all but one are measured; the one left derived is the one
            // whose counter would cost most (a trampoline on a critical edge).
            let open: Vec<u32> = outs
                .iter()
                .copied()
                .filter(|&e| !measured[e as usize])
                .collect();
            if open.len() > 1 {
                let keep = *open
                    .iter()
                    .max_by_key(|&&e| (site_cost(cfg, e), std::cmp::Reverse(e)))
                    .unwrap_or(&open[0]);
                for e in open {
                    if e != keep {
                        measured[e as usize] = true;
                    }
                }
            }
        }
        // Blocks counted at their start: handlers (exceptions reach them from anywhere), and
        // blocks chosen to break a cycle whose edges would all need trampolines.
        let mut counted: Vec<bool> = cfg.blocks.iter().map(|b| b.handler).collect();
        // Derived edges must not form a cycle (a loop's count cannot come from itself).
        break_cycles(cfg, &mut measured, &mut counted);
        // A block whose outgoing edges all ended up measured can leave one derived again if
        // that closes no cycle.
        for outs in &cfg.out {
            if outs.len() > 1 && outs.iter().all(|&e| measured[e as usize]) {
                let mut cands: Vec<u32> = outs
                    .iter()
                    .copied()
                    .filter(|&e| {
                        !matches!(
                            cfg.edges[e as usize].kind,
                            EdgeKind::AfterCall | EdgeKind::Thrown
                        )
                    })
                    .collect();
                cands.sort_by_key(|&e| std::cmp::Reverse(site_cost(cfg, e)));
                for e in cands {
                    measured[e as usize] = false;
                    if derived_reaches(cfg, &measured, &counted, e) {
                        measured[e as usize] = true;
                    } else {
                        break;
                    }
                }
            }
        }
        let mut counters = Vec::new();
        for (b, c) in counted.iter().enumerate() {
            if *c {
                counters.push(Counter::Block(b as u32));
            }
        }
        let mut edge_counter = vec![None; ne];
        for (e, m) in measured.iter().enumerate() {
            if *m {
                edge_counter[e] = Some(counters.len() as u32);
                counters.push(Counter::Edge(e as u32));
            }
        }
        // The entry counter comes last: the lookup bumps it first thing, and its range check
        // on the method's highest index lets C2 drop the checks of the method's other
        // counters (constant indices below a dominating check).
        counters.push(Counter::Entry);
        Plan {
            counters,
            edge_counter,
        }
    }

    /// Where counter `i` is bumped.
    pub fn site(&self, cfg: &Cfg, i: usize) -> Option<Site> {
        Some(match *self.counters.get(i)? {
            Counter::Entry => Site::Entry,
            Counter::Block(b) => Site::Before(cfg.blocks[b as usize].first),
            Counter::Edge(e) => edge_site(cfg, e),
        })
    }

    /// Block and edge counts from counter values (indexed like `counters`). Arithmetic
    /// saturates; a derived edge whose siblings exceed its block (only possible with
    /// unmodelled exceptions or saturated counters) is 0.
    pub fn solve(&self, cfg: &Cfg, values: &[u64]) -> Counts {
        let (block, edge) = self.derive(cfg, values);
        Counts {
            blocks: block.into_iter().map(|c| c.unwrap_or(0)).collect(),
            edges: edge.into_iter().map(|c| c.unwrap_or(0)).collect(),
        }
    }

    /// Forward derivation: block and edge counts, `None` where the counters do not fix them.
    fn derive(&self, cfg: &Cfg, values: &[u64]) -> (Vec<Option<u64>>, Vec<Option<u64>>) {
        let nb = cfg.blocks.len();
        let value = |i: u32| values.get(i as usize).copied().unwrap_or(0);
        let mut edge: Vec<Option<u64>> = self.edge_counter.iter().map(|c| c.map(value)).collect();
        let mut block: Vec<Option<u64>> = vec![None; nb];
        let mut handler = vec![None; nb];
        for (i, c) in self.counters.iter().enumerate() {
            if let Counter::Block(b) = c {
                handler[*b as usize] = Some(value(i as u32));
            }
        }
        let entries = self
            .counters
            .iter()
            .position(|c| *c == Counter::Entry)
            .map_or(0, |i| value(i as u32));
        // Forward derivation in dependency order (a worklist; each block and edge once).
        let mut progress = true;
        while progress {
            progress = false;
            for b in 0..nb {
                if block[b].is_none() {
                    let c = if let Some(h) = handler[b] {
                        Some(h)
                    } else {
                        let mut sum = if b == 0 { entries } else { 0 };
                        let mut all = true;
                        for &e in &cfg.ins[b] {
                            match edge[e as usize] {
                                Some(v) => sum = sum.saturating_add(v),
                                None => all = false,
                            }
                        }
                        all.then_some(sum)
                    };
                    if c.is_some() {
                        block[b] = c;
                        progress = true;
                    }
                }
                if let Some(c) = block[b] {
                    let unknown: Vec<u32> = cfg.out[b]
                        .iter()
                        .copied()
                        .filter(|&e| edge[e as usize].is_none())
                        .collect();
                    if unknown.len() == 1 {
                        let known: u64 = cfg.out[b]
                            .iter()
                            .filter_map(|&e| edge[e as usize])
                            .fold(0u64, |a, v| a.saturating_add(v));
                        edge[unknown[0] as usize] = Some(c.saturating_sub(known));
                        progress = true;
                    }
                }
            }
        }
        (block, edge)
    }

    /// Whether counter values obey flow conservation as [`Plan::solve`] reads them: no block is
    /// left by more than arrived at it, so no derived edge had to be clamped to 0 (its block's
    /// other exits already exceeding the block). The counters of whole calls always are
    /// (exits may fall short of arrivals: an exception out of the method, which a derived edge
    /// may absorb, over-counted but never clamped); those of part of a call (a per-test window
    /// that began or ended while the call was under way) need not be, and their solution is
    /// then no count of anything. Without clamping the solution is linear in the counters: the
    /// solutions of windows that are all consistent add up to the solution of their sum.
    pub fn consistent(&self, cfg: &Cfg, values: &[u64]) -> bool {
        let (block, edge) = self.derive(cfg, values);
        (0..cfg.blocks.len()).all(|b| {
            block[b].is_none_or(|c| {
                let left = (cfg.out[b].iter())
                    .filter_map(|&e| edge[e as usize])
                    .fold(0u64, |a, v| a.saturating_add(v));
                left <= c
            })
        })
    }

    /// True when every reachable block and edge count follows from the counters.
    pub fn is_complete(&self, cfg: &Cfg) -> bool {
        let (block, edge) = self.derive(cfg, &vec![0; self.counters.len()]);
        // Blocks no edge reaches (dead code) are known as 0 without a derivation.
        let reachable = reachable(cfg);
        block.iter().zip(&reachable).all(|(c, r)| c.is_some() || !r)
            && cfg
                .edges
                .iter()
                .zip(&edge)
                .all(|(ed, c)| c.is_some() || !reachable[ed.from as usize])
    }
}

/// Block and edge counts of one method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts {
    pub blocks: Vec<u64>,
    pub edges: Vec<u64>,
}

/// Blocks reachable from the entry or a handler.
fn reachable(cfg: &Cfg) -> Vec<bool> {
    let mut seen = vec![false; cfg.blocks.len()];
    let mut stack: Vec<u32> = vec![0];
    for (b, blk) in cfg.blocks.iter().enumerate() {
        if blk.handler {
            stack.push(b as u32);
        }
    }
    while let Some(b) = stack.pop() {
        if std::mem::replace(&mut seen[b as usize], true) {
            continue;
        }
        for &e in &cfg.out[b as usize] {
            if let Some(t) = cfg.edges[e as usize].to {
                stack.push(t);
            }
        }
    }
    seen
}

/// Cost of counting on edge `e`: 1 when the counter can go at one end of the edge, 3 when the
/// edge needs a trampoline.
fn site_cost(cfg: &Cfg, e: u32) -> u32 {
    match edge_site(cfg, e) {
        Site::Trampoline(_) => 3,
        _ => 1,
    }
}

/// The cheapest place that counts edge `e` and nothing else.
fn edge_site(cfg: &Cfg, e: u32) -> Site {
    let edge = &cfg.edges[e as usize];
    if edge.kind == EdgeKind::Thrown {
        return Site::Thrown(edge.from);
    }
    let from = &cfg.blocks[edge.from as usize];
    if let Some(t) = edge.to {
        let tb = &cfg.blocks[t as usize];
        if t != 0 && !tb.handler && cfg.ins[t as usize].len() == 1 {
            return Site::Before(tb.first);
        }
    }
    // the block's exits other than by an exception (counted by the handlers)
    let normal = cfg.out[edge.from as usize]
        .iter()
        .filter(|&&x| cfg.edges[x as usize].kind != EdgeKind::Thrown)
        .count();
    if normal == 1 {
        let last = from.end - 1;
        return match edge.kind {
            // after the last instruction: it returned (a call) or did not throw
            EdgeKind::Fall | EdgeKind::AfterCall => Site::After(last),
            // A goto, a switch with one target, a return or athrow (blocks without an
            // exceptional exit): everything that reaches the instruction takes this edge. (A
            // conditional jump always has two edges.)
            _ => Site::Before(last),
        };
    }
    if edge.kind == EdgeKind::NotTaken {
        // Code after a conditional jump runs only when it falls through.
        return Site::After(from.end - 1);
    }
    Site::Trampoline(e)
}

/// Breaks every cycle of derived edges: measures the cheapest of the cycle's edges (the one
/// closing it in a depth-first search when several cost the same), or, when each would need
/// a trampoline, counts the block the closing edge enters at its start. After each choice the
/// search starts again, so the cycles left are found in the updated graph.
fn break_cycles(cfg: &Cfg, measured: &mut [bool], counted: &mut [bool]) {
    while let Some(cycle) = find_cycle(cfg, measured, counted) {
        let last = cycle[cycle.len() - 1];
        let e = cycle
            .iter()
            .copied()
            .rev()
            .min_by_key(|&e| site_cost(cfg, e))
            .unwrap_or(last);
        match cfg.edges[last as usize].to {
            Some(t) if site_cost(cfg, e) > 1 => counted[t as usize] = true,
            _ => measured[e as usize] = true,
        }
    }
}

/// The edges of one cycle of derived edges (the closing edge last), if there is one.
fn find_cycle(cfg: &Cfg, measured: &[bool], counted: &[bool]) -> Option<Vec<u32>> {
    let nb = cfg.blocks.len();
    // 0 = unseen, 1 = on the DFS stack, 2 = done.
    let mut state = vec![0u8; nb];
    for root in 0..nb {
        if state[root] != 0 {
            continue;
        }
        // Iterative DFS: (block, position in its out-edge list).
        let mut stack: Vec<(u32, usize)> = vec![(root as u32, 0)];
        state[root] = 1;
        while let Some(&mut (b, ref mut pos)) = stack.last_mut() {
            let outs = &cfg.out[b as usize];
            if *pos == outs.len() {
                state[b as usize] = 2;
                stack.pop();
                continue;
            }
            let e = outs[*pos];
            *pos += 1;
            if measured[e as usize] {
                continue;
            }
            let Some(t) = derived_target(cfg, counted, e) else {
                continue;
            };
            match state[t as usize] {
                0 => {
                    state[t as usize] = 1;
                    stack.push((t, 0));
                }
                1 => {
                    // The path from t to b on the stack, then e.
                    let from = stack.iter().position(|&(x, _)| x == t).unwrap_or(0);
                    let mut cycle: Vec<u32> = stack[from..stack.len() - 1]
                        .iter()
                        .map(|&(x, p)| cfg.out[x as usize][p - 1])
                        .collect();
                    cycle.push(e);
                    return Some(cycle);
                }
                _ => {}
            }
        }
    }
    None
}

/// With edge `e` derived: does its target reach its source through derived edges (a cycle)?
fn derived_reaches(cfg: &Cfg, measured: &[bool], counted: &[bool], e: u32) -> bool {
    let Some(start) = derived_target(cfg, counted, e) else {
        return false;
    };
    let goal = cfg.edges[e as usize].from;
    let mut seen = vec![false; cfg.blocks.len()];
    let mut stack = vec![start];
    while let Some(b) = stack.pop() {
        if b == goal {
            return true;
        }
        if std::mem::replace(&mut seen[b as usize], true) {
            continue;
        }
        for &x in &cfg.out[b as usize] {
            if !measured[x as usize] {
                if let Some(t) = derived_target(cfg, counted, x) {
                    stack.push(t);
                }
            }
        }
    }
    false
}

/// The block whose count depends on edge `e` (none for exits and blocks counted at their
/// start).
fn derived_target(cfg: &Cfg, counted: &[bool], e: u32) -> Option<u32> {
    let t = cfg.edges[e as usize].to?;
    (!counted[t as usize]).then_some(t)
}
