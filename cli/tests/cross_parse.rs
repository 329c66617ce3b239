//! Every class of the JDK, rewritten with probes (entry, exit, catch-all, timer local, forced
//! wide jumps), parsed by cafebabe (an independent parser): it must parse every class and its
//! instruction list (offsets, opcodes, local indices) must agree with ours.
#[path = "../../bci/tests/common/mod.rs"]
mod common;

use bci_rewriter::{instrument_with, Options, Outcome, Rules, SequentialIds};

/// Our mnemonic in cafebabe's naming (variant name, lowercased).
fn normalize(m: &str) -> String {
    let load_store = [
        "iload_", "lload_", "fload_", "dload_", "aload_", "istore_", "lstore_", "fstore_",
        "dstore_", "astore_",
    ];
    let strip = load_store.iter().any(|p| m.starts_with(p)) || m == "goto_w" || m == "jsr_w";
    let base = if strip { &m[..m.len() - 2] } else { m };
    base.replace('_', "")
}

fn theirs(op: &cafebabe::bytecode::Opcode<'_>) -> (String, Option<u16>) {
    let d = format!("{op:?}");
    let name: String = d
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    let local = match op {
        cafebabe::bytecode::Opcode::Aload(i)
        | cafebabe::bytecode::Opcode::Astore(i)
        | cafebabe::bytecode::Opcode::Iload(i)
        | cafebabe::bytecode::Opcode::Istore(i)
        | cafebabe::bytecode::Opcode::Lload(i)
        | cafebabe::bytecode::Opcode::Lstore(i)
        | cafebabe::bytecode::Opcode::Fload(i)
        | cafebabe::bytecode::Opcode::Fstore(i)
        | cafebabe::bytecode::Opcode::Dload(i)
        | cafebabe::bytecode::Opcode::Dstore(i)
        | cafebabe::bytecode::Opcode::Ret(i)
        | cafebabe::bytecode::Opcode::Iinc(i, _) => Some(*i),
        _ => None,
    };
    (name, local)
}

fn compare(bytes: &[u8]) -> Result<usize, String> {
    let mut opts = cafebabe::ParseOptions::default();
    opts.parse_bytecode(true);
    let theirs_cf =
        cafebabe::parse_class_with_options(bytes, &opts).map_err(|e| format!("cafebabe: {e}"))?;
    let ours = bci::ClassFile::parse(bytes).map_err(|e| e.to_string())?;
    let mut compared = 0;
    for (m, tm) in ours.methods.iter().zip(theirs_cf.methods.iter()) {
        let Some((_, a)) = ours.find_attr(&m.attributes, "Code") else {
            continue;
        };
        let code = bci::CodeAttr::parse(&ours, a).map_err(|e| e.to_string())?;
        let insns = code.decode_all().map_err(|e| e.to_string())?;
        let tcode = tm
            .attributes
            .iter()
            .find_map(|a| match &a.data {
                cafebabe::attributes::AttributeData::Code(c) => Some(c),
                _ => None,
            })
            .ok_or_else(|| format!("{}: cafebabe sees no Code", ours.method_path(m)))?;
        let tops = &tcode
            .bytecode
            .as_ref()
            .ok_or("cafebabe did not decode bytecode")?
            .opcodes;
        if tops.len() != insns.len()
            || tcode.max_stack != code.max_stack
            || tcode.max_locals != code.max_locals
        {
            return Err(format!(
                "{}: {} vs {} instructions",
                ours.method_path(m),
                insns.len(),
                tops.len()
            ));
        }
        for (i, (toff, top)) in insns.iter().zip(tops.iter()) {
            let (tname, tlocal) = theirs(top);
            let ok = i.pc as usize == *toff
                && normalize(i.info().mnemonic) == tname
                && (tlocal.is_none() || tlocal == i.local(code.code));
            if !ok {
                return Err(format!(
                    "{} pc {}: ours {} {:?}, cafebabe {toff} {top:?}",
                    ours.method_path(m),
                    i.pc,
                    i.info().mnemonic,
                    i.local(code.code)
                ));
            }
        }
        compared += insns.len();
    }
    Ok(compared)
}

#[test]
fn cafebabe_parses_every_rewritten_jdk_class_and_agrees_on_instructions() {
    let dir = common::jdk_corpus();
    let variants = [
        (
            "enter/exit/unwind",
            "[[rule]]\nprobes = [\"enter\", \"exit\", \"unwind\"]\n",
            false,
        ),
        (
            "timer + forced wide jumps",
            "[[rule]]\nprobes = [\"timer\", \"unwind\"]\n",
            true,
        ),
    ];
    for (what, toml, wide) in variants {
        let r = Rules::parse(toml, "t.toml").unwrap();
        let opts = Options {
            force_wide_jumps: wide,
            ..Default::default()
        };
        let mut reg = SequentialIds(0);
        let (mut classes, mut insns) = (0, 0);
        let mut bad = Vec::new();
        for f in common::class_files(&dir) {
            let bytes = std::fs::read(&f).unwrap();
            match instrument_with(&bytes, &r, &mut reg, &opts) {
                Ok(Outcome::Rewritten(b)) => match compare(&b) {
                    Ok(n) => {
                        classes += 1;
                        insns += n;
                    }
                    Err(e) => bad.push(format!("{}: {e}", f.display())),
                },
                Ok(Outcome::Unchanged) => {}
                Err(e) => bad.push(format!("{}: rewrite: {e}", f.display())),
            }
        }
        eprintln!("{what}: {classes} classes, {insns} instructions agree");
        assert!(
            bad.is_empty(),
            "{what}: {} disagreements:\n{}",
            bad.len(),
            bad[..bad.len().min(10)].join("\n")
        );
        assert!(classes > 20_000 && insns > 5_000_000);
    }
}
