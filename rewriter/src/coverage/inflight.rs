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

#[cfg(test)]
mod tests {
    use super::exit_counter_at;

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
