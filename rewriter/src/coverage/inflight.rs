//! Calls still running when coverage data is written.
//!
//! The count after a call is derived (its block's count minus its exceptional exits), so a
//! call that has neither returned nor thrown when the data is written would make the rest of
//! its block, and what the flow derives from it, count as run. At each dump the agent walks the
//! threads' stacks and counts every frame of an instrumented method as an exit of the block it
//! is in: the counter [`exit_counter_at`] finds from the method's own code.

use bci::code::decode;
use bci::opcodes::{op, Flow};

/// What the exit local holds before an instruction, on every normal path from the method's
/// start seen so far.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum V {
    Unseen,
    Known(i32),
    Unknown,
}

fn join(a: V, b: V) -> V {
    match (a, b) {
        (V::Unseen, x) | (x, V::Unseen) => x,
        (V::Known(x), V::Known(y)) if x == y => a,
        _ => V::Unknown,
    }
}

/// The exceptional-exit counter that the int local `slot` (the method's exit local,
/// [`super::MethodCoverage::exit_local`]) names before the instruction at `pc` of the
/// instrumented method's `code`: the value the coverage code stored there (a constant and
/// `istore`, or `iinc`), the same on every normal path from the method's start. None where it
/// is not one value (code reached only through a handler: the exception table is not read),
/// where it is [`super::LOST`], or for code that does not decode. Later passes (cpu=times
/// probes, tracing) may add code around it; they never write that local.
pub fn exit_counter_at(code: &[u8], slot: u16, pc: u32) -> Option<u32> {
    let n = code.len();
    if pc as usize >= n {
        return None;
    }
    // before each instruction: the local's value, and the int constant the instruction before
    // pushed (a constant and its `istore` are one snippet, never split by a jump target)
    let mut x = vec![V::Unseen; n];
    let mut top: Vec<Option<i32>> = vec![None; n];
    let mut queued = vec![false; n];
    x[0] = V::Unknown;
    let mut work = vec![0usize];
    queued[0] = true;
    while let Some(at) = work.pop() {
        queued[at] = false;
        let i = decode(code, at).ok()?;
        let (mut xv, mut tv) = (x[at], None);
        match i.opcode {
            op::ICONST_M1..=op::ICONST_5 => tv = Some(i.opcode as i32 - op::ICONST_0 as i32),
            op::BIPUSH | op::SIPUSH => tv = i.immediate(code),
            op::ISTORE | op::ISTORE_0..=op::ISTORE_3 if i.local(code) == Some(slot) => {
                xv = top[at].map_or(V::Unknown, V::Known);
            }
            op::IINC if i.local(code) == Some(slot) => {
                xv = match (xv, i.immediate(code)) {
                    (V::Known(v), Some(d)) => V::Known(v.wrapping_add(d)),
                    (V::Unseen, _) => V::Unseen,
                    _ => V::Unknown,
                };
            }
            _ => {
                // any other write over the slot (a long or double store ending there)
                if let Some(l) = i.local(code) {
                    let store = matches!(
                        i.opcode,
                        op::ISTORE..=op::ASTORE | op::ISTORE_0..=op::ASTORE_3
                    );
                    if store && l <= slot && slot < l + i.local_size() {
                        xv = V::Unknown;
                    }
                }
            }
        }
        let next = at + i.len as usize;
        let mut succ: Vec<usize> = Vec::new();
        match i.flow() {
            Flow::Next => succ.push(next),
            Flow::Cond | Flow::Jsr | Flow::Goto | Flow::Switch => {
                if matches!(i.flow(), Flow::Cond | Flow::Jsr) {
                    succ.push(next);
                }
                let mut bad = false;
                i.for_each_target(code, |t| match usize::try_from(t) {
                    Ok(t) if t < n => succ.push(t),
                    _ => bad = true,
                });
                if bad {
                    return None;
                }
            }
            Flow::Return | Flow::Throw | Flow::Ret => {}
        }
        for s in succ {
            if s >= n {
                continue;
            }
            let first = x[s] == V::Unseen;
            let nx = join(x[s], xv);
            let nt = if first || top[s] == tv { tv } else { None };
            if nx != x[s] || nt != top[s] {
                x[s] = nx;
                top[s] = nt;
                if !queued[s] {
                    queued[s] = true;
                    work.push(s);
                }
            }
        }
    }
    match x[pc as usize] {
        V::Known(v) if v > super::LOST as i32 => Some(v as u32),
        _ => None,
    }
}

/// A fingerprint of a method's code: its length and a hash of its bytes. At a dump, the code a
/// frame runs (JVMTI GetBytecodes) is the code whose exit local the class hook kept if the
/// fingerprints are equal; otherwise another agent's retransformation rewrote or replaced it
/// (an ASM `LocalVariablesSorter` renumbers the locals, so the slot kept may name another local;
/// a constant pool merged renumbers its indices) and the exit local is looked for with
/// [`exit_local_in`].
pub fn fingerprint(code: &[u8]) -> (u32, u64) {
    use std::hash::Hasher;
    let mut h = std::hash::DefaultHasher::new();
    h.write(code);
    (code.len() as u32, h.finish())
}

const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a, 64 bits, of `v`'s bytes added to `h`.
fn fnv(h: u64, v: i64) -> u64 {
    v.to_le_bytes()
        .iter()
        .fold(h, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Calls `f(local, what)` for every write of an int local in `code`, in pc order (what: the
/// constant an `istore` stores when the instruction before pushed one, an `iinc`'s increment
/// marked, or a mark for anything else), and `bump(local)` for each local an exit handler's
/// bump reads (`iload L; dup2; laload; lconst_1; ladd; lastore`, what the coverage pass puts at
/// each handler). None for code that does not decode.
fn int_writes(code: &[u8], mut f: impl FnMut(u16, i64), mut bump: impl FnMut(u16)) -> Option<()> {
    const BUMP: [u8; 5] = [op::DUP2, op::LALOAD, op::LCONST_1, op::LADD, op::LASTORE];
    let mut top: Option<i32> = None;
    // the last iload's local, and how many of BUMP followed it
    let mut load: Option<(u16, usize)> = None;
    let mut at = 0;
    while at < code.len() {
        let i = decode(code, at).ok()?;
        at += i.len as usize;
        let pushed = match i.opcode {
            op::ICONST_M1..=op::ICONST_5 => Some(i.opcode as i32 - op::ICONST_0 as i32),
            op::BIPUSH | op::SIPUSH => i.immediate(code),
            _ => None,
        };
        load = match (load, i.opcode) {
            (_, op::ILOAD | op::ILOAD_0..=op::ILOAD_3) => i.local(code).map(|l| (l, 0)),
            (Some((l, k)), o) if BUMP[k] == o => {
                if k + 1 == BUMP.len() {
                    bump(l);
                    None
                } else {
                    Some((l, k + 1))
                }
            }
            _ => None,
        };
        match i.opcode {
            op::ISTORE | op::ISTORE_0..=op::ISTORE_3 => {
                f(i.local(code)?, top.map_or(i64::MIN, i64::from))
            }
            op::IINC => f(
                i.local(code)?,
                (1 << 40) + i64::from(i.immediate(code).unwrap_or(0)),
            ),
            _ => {}
        }
        top = pushed;
    }
    Some(())
}

/// A hash of the values the coverage code writes to the exit local `slot` of `code`, in order
/// (see [`exit_local_in`]); None when nothing writes it or the code does not decode.
pub fn exit_stores(code: &[u8], slot: u16) -> Option<u64> {
    let mut h = None;
    int_writes(
        code,
        |l, v| {
            if l == slot {
                h = Some(fnv(h.unwrap_or(FNV_START), v));
            }
        },
        |_| {},
    )?;
    h
}

/// The exit local of `code`, a method's code as another agent's retransformation left it
/// (its [`fingerprint`] is not the one the coverage pass gave): the one int local an exit
/// handler's bump reads whose writes hash to `stores` ([`exit_stores`] of the code the pass
/// gave). A transformer that renumbers the locals (ASM's `LocalVariablesSorter`) keeps the
/// writes and their order. None when no local or more than one fits (the code was replaced:
/// that call is not adjusted).
pub fn exit_local_in(code: &[u8], stores: u64) -> Option<u16> {
    let mut writes: std::collections::HashMap<u16, u64> = Default::default();
    let mut bumped = Vec::new();
    int_writes(
        code,
        |l, v| {
            let h = writes.entry(l).or_insert(FNV_START);
            *h = fnv(*h, v);
        },
        |l| bumped.push(l),
    )?;
    bumped.sort_unstable();
    bumped.dedup();
    let mut fits = bumped
        .into_iter()
        .filter(|l| writes.get(l) == Some(&stores));
    match (fits.next(), fits.next()) {
        (Some(slot), None) => Some(slot),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{exit_counter_at, exit_local_in, exit_stores};

    #[test]
    fn a_renumbered_exit_local_is_found_by_its_writes() {
        // 0: bipush 7; 2: istore_1; 3: invokestatic #1; 6: iinc 1 1; 9: invokestatic #1;
        // 12: aload_2; 13: iload_1; 14: dup2; laload; lconst_1; ladd; lastore; 19: return
        let code = [
            0x10, 7, 0x3c, 0xb8, 0, 1, 0x84, 1, 1, 0xb8, 0, 1, 0x2c, 0x1b, 0x5c, 0x2f, 0x0a, 0x61,
            0x50, 0xb1,
        ];
        let stores = exit_stores(&code, 1).unwrap();
        assert_eq!(exit_local_in(&code, stores), Some(1));
        // the same with local 1 as local 3, after an int local 1 of the transformer's own
        let moved = [
            0x04, 0x3c, 0x10, 7, 0x3e, 0xb8, 0, 1, 0x84, 3, 1, 0xb8, 0, 1, 0x2c, 0x1d, 0x5c, 0x2f,
            0x0a, 0x61, 0x50, 0xb1,
        ];
        assert_eq!(exit_local_in(&moved, stores), Some(3));
        // other writes: not it
        assert_eq!(exit_local_in(&moved, exit_stores(&moved, 1).unwrap()), None);
        // not read by a bump: not it
        let unread = [0x10, 7, 0x3c, 0xb8, 0, 1, 0x84, 1, 1, 0xb1];
        assert_eq!(exit_local_in(&unread, stores), None);
    }

    #[test]
    fn the_exit_local_is_followed_through_stores_iincs_and_joins() {
        // 0: bipush 7; 2: istore_1; 3: invokestatic #1; 6: iinc 1 1; 9: invokestatic #1;
        // 12: iload_0; 13: ifeq 22; 16: bipush 20; 18: istore_1; 19: goto 24;
        // 22: iconst_5; 23: istore_1; 24: invokestatic #1 (20 or 5: unknown);
        // 27: bipush 9; 29: istore_1; 30: invokestatic #1; 33: return
        let code = [
            0x10, 7, 0x3c, 0xb8, 0, 1, 0x84, 1, 1, 0xb8, 0, 1, 0x1a, 0x99, 0, 9, 0x10, 20, 0x3c,
            0xa7, 0, 5, 0x08, 0x3c, 0xb8, 0, 1, 0x10, 9, 0x3c, 0xb8, 0, 1, 0xb1,
        ];
        assert_eq!(exit_counter_at(&code, 1, 3), Some(7));
        assert_eq!(exit_counter_at(&code, 1, 9), Some(8));
        assert_eq!(exit_counter_at(&code, 1, 19), Some(20));
        assert_eq!(exit_counter_at(&code, 1, 24), None);
        assert_eq!(exit_counter_at(&code, 1, 30), Some(9));
        // another slot, a pc past the code
        assert_eq!(exit_counter_at(&code, 2, 3), None);
        assert_eq!(exit_counter_at(&code, 1, 99), None);
        // before the first store: not set
        assert_eq!(exit_counter_at(&code, 1, 0), None);
        // LOST (0) is no counter
        let lost = [0x03, 0x3c, 0xb8, 0, 1, 0xb1];
        assert_eq!(exit_counter_at(&lost, 1, 2), None);
    }
}
