//! HotSpot's `-XX` flags, read and set from inside the JVM through the tables libjvm.so exports
//! for its serviceability agent (`gHotSpotVMStructs`, `gHotSpotVMTypes`: the layout of
//! `JVMFlag` and where the flag array is), as async-profiler and other profilers do. Set: one
//! flag, `DontCompileHugeMethods`, when coverage counters grow a method past HotSpot's
//! 8000-byte compile limit (such a method would otherwise never be JIT-compiled, however hot).
//! Read at start ([`check_flags`]): the flags the agent cannot work with (an AOT cache training
//! run, `-Xshare:on` and `-XX:AOTMode=on` with the early class hook) and those that lose its
//! data (`-XX:+ExitOnOutOfMemoryError`, `-Xrs`); `-Xshare:` from the JVM's argument list
//! (`Arguments::_jvm_args_array`, the list `jcmd VM.command_line` shows), since JDK 25 keeps
//! it in no flag.
//!
//! Every step is checked (symbols present, the entries found, sizes and counts sane, the flag's
//! type bool or ccstr where the table gives it); anything missing is an error, never a guess.

use std::ffi::{c_char, c_void, CStr};

extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlopen(file: *const c_char, mode: i32) -> *mut c_void;
}
const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();
const RTLD_LAZY: i32 = 1;
const RTLD_NOLOAD: i32 = 4;

/// The address of `name` in the global scope, else in an already loaded libjvm.so.
fn symbol(name: &CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks the symbol up.
    let p = unsafe { dlsym(RTLD_DEFAULT, name.as_ptr()) };
    if !p.is_null() {
        return Some(p);
    }
    // SAFETY: RTLD_NOLOAD never loads a library: it returns a handle only if libjvm.so is
    // already in the process (as it is when the JVM loaded us), else null.
    let h = unsafe { dlopen(c"libjvm.so".as_ptr(), RTLD_LAZY | RTLD_NOLOAD) };
    if h.is_null() {
        return None;
    }
    // SAFETY: h is a valid handle from dlopen; the name is NUL-terminated.
    let p = unsafe { dlsym(h, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// The value of an exported `uint64_t` variable (the tables' offsets and strides).
fn exported_u64(name: &CStr) -> Result<u64, String> {
    let p = symbol(name).ok_or_else(|| format!("libjvm.so does not export {name:?}"))?;
    // SAFETY: the symbol is an exported uint64_t variable of libjvm.so (vmStructs.cpp),
    // aligned and initialized before any agent runs.
    Ok(unsafe { *(p as *const u64) })
}

/// The value of an exported pointer variable (the tables themselves).
fn exported_ptr(name: &CStr) -> Result<*const u8, String> {
    let p = symbol(name).ok_or_else(|| format!("libjvm.so does not export {name:?}"))?;
    // SAFETY: the symbol is an exported pointer variable of libjvm.so (vmStructs.cpp).
    let v = unsafe { *(p as *const *const u8) };
    if v.is_null() {
        return Err(format!("{name:?} is null"));
    }
    Ok(v)
}

/// Reads the C string at `p` (null: None).
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that outlives the call.
unsafe fn c_str<'a>(p: *const c_char) -> Option<&'a [u8]> {
    if p.is_null() {
        None
    } else {
        // SAFETY: as the caller promises.
        Some(unsafe { CStr::from_ptr(p) }.to_bytes())
    }
}

/// Where JVMFlag's parts are: the flag array, its length, the size of one flag and the
/// offsets of its name, value address and (where listed) type.
struct FlagTable {
    flags: *const u8,
    count: usize,
    size: usize,
    name_at: usize,
    addr_at: usize,
    /// The offset of `_type`, and whether it is an int (JDK 17+) rather than a string.
    type_at: Option<(usize, bool)>,
}

/// One entry of the VMStructs table.
struct StructEntry<'a> {
    field: &'a [u8],
    type_string: Option<&'a [u8]>,
    is_static: bool,
    offset: usize,
    address: *const u8,
}

/// Calls `f` with every entry of the VMStructs table whose type name is one of `types`.
fn struct_entries(types: &[&[u8]], mut f: impl FnMut(&StructEntry)) -> Result<(), String> {
    let structs = exported_ptr(c"gHotSpotVMStructs")?;
    let s_type = exported_u64(c"gHotSpotVMStructEntryTypeNameOffset")? as usize;
    let s_field = exported_u64(c"gHotSpotVMStructEntryFieldNameOffset")? as usize;
    let s_tstr = exported_u64(c"gHotSpotVMStructEntryTypeStringOffset")? as usize;
    let s_static = exported_u64(c"gHotSpotVMStructEntryIsStaticOffset")? as usize;
    let s_offset = exported_u64(c"gHotSpotVMStructEntryOffsetOffset")? as usize;
    let s_addr = exported_u64(c"gHotSpotVMStructEntryAddressOffset")? as usize;
    let s_stride = exported_u64(c"gHotSpotVMStructEntryArrayStride")? as usize;
    let sane = |x: usize| x < 256;
    if ![s_type, s_field, s_tstr, s_static, s_offset, s_addr]
        .into_iter()
        .all(sane)
        || !(8..256).contains(&s_stride)
    {
        return Err("the VMStructs layout is not a known one".into());
    }
    // the table ends with an entry whose type name is null; bounded in case it does not
    for k in 0..100_000 {
        // SAFETY: entry k lies within the exported array (it ends with a null-named entry,
        // checked before reading further); the fields are at the offsets the JVM exports.
        unsafe {
            let e = structs.add(k * s_stride);
            let Some(ty) = c_str(*(e.add(s_type) as *const *const c_char)) else {
                break;
            };
            if !types.contains(&ty) {
                continue;
            }
            f(&StructEntry {
                field: c_str(*(e.add(s_field) as *const *const c_char)).unwrap_or_default(),
                type_string: c_str(*(e.add(s_tstr) as *const *const c_char)),
                is_static: *(e.add(s_static) as *const i32) != 0,
                offset: *(e.add(s_offset) as *const u64) as usize,
                address: *(e.add(s_addr) as *const *const u8),
            });
        }
    }
    Ok(())
}

fn flag_table() -> Result<FlagTable, String> {
    let (mut flags_addr, mut count_addr) = (None, None);
    let (mut name_at, mut addr_at, mut type_at) = (None, None, None);
    struct_entries(&[b"JVMFlag", b"Flag"], |e| match (e.field, e.is_static) {
        (b"flags", true) => flags_addr = Some(e.address),
        (b"numFlags", true) => count_addr = Some(e.address),
        (b"_name", false) => name_at = Some(e.offset),
        (b"_addr", false) => addr_at = Some(e.offset),
        // JDK 17+: an int (0 = bool); JDK 8 and 11: a const char* ("bool")
        (b"_type", false) => type_at = Some((e.offset, e.type_string == Some(b"int".as_slice()))),
        _ => {}
    })?;
    let types = exported_ptr(c"gHotSpotVMTypes")?;
    let t_name = exported_u64(c"gHotSpotVMTypeEntryTypeNameOffset")? as usize;
    let t_size = exported_u64(c"gHotSpotVMTypeEntrySizeOffset")? as usize;
    let t_stride = exported_u64(c"gHotSpotVMTypeEntryArrayStride")? as usize;
    if t_name >= 256 || t_size >= 256 || !(8..256).contains(&t_stride) {
        return Err("the VMStructs layout is not a known one".into());
    }
    let mut size = None;
    for k in 0..100_000 {
        // SAFETY: as in struct_entries, for the types table.
        unsafe {
            let e = types.add(k * t_stride);
            let Some(name) = c_str(*(e.add(t_name) as *const *const c_char)) else {
                break;
            };
            if name == b"JVMFlag" || name == b"Flag" {
                size = Some(*(e.add(t_size) as *const u64) as usize);
                break;
            }
        }
    }
    let missing = |what: &str| format!("VMStructs: no {what} for JVMFlag");
    let (flags_addr, count_addr) = (
        flags_addr
            .filter(|p| !p.is_null())
            .ok_or_else(|| missing("flags"))?,
        count_addr
            .filter(|p| !p.is_null())
            .ok_or_else(|| missing("numFlags"))?,
    );
    let (name_at, addr_at) = (
        name_at.ok_or_else(|| missing("_name"))?,
        addr_at.ok_or_else(|| missing("_addr"))?,
    );
    let size = size.ok_or_else(|| missing("type size"))?;
    // SAFETY: flags_addr and count_addr are the addresses of JVMFlag's static fields `flags`
    // (JVMFlag*) and `numFlags` (size_t), as the table says.
    let (flags, count) = unsafe {
        (
            *(flags_addr as *const *const u8),
            *(count_addr as *const usize),
        )
    };
    let ptr = std::mem::size_of::<*const u8>();
    if flags.is_null()
        || !(100..20_000).contains(&count)
        || !(16..256).contains(&size)
        || name_at + ptr > size
        || addr_at + ptr > size
        || type_at.is_some_and(|(t, int)| t + if int { 4 } else { ptr } > size)
    {
        return Err(format!(
            "VMStructs: JVMFlag table out of range ({count} flags of {size} bytes)"
        ));
    }
    Ok(FlagTable {
        flags,
        count,
        size,
        name_at,
        addr_at,
        type_at,
    })
}

/// A flag's type as the table gives it: JDK 17+ numbers them (jvmFlag.hpp's `FlagType`:
/// bool 0, int, uint, intx, uintx, uint64_t, size_t, double, ccstr 8, ccstrlist 9), JDK 8 and
/// 11 name them.
#[derive(Clone, Copy, PartialEq, Debug)]
enum FlagType {
    Bool,
    Ccstr,
}

impl FlagTable {
    /// The entry of the flag `name` and its value address (None: no such flag); an error if
    /// its type is not `want` (or, for a string, cannot be told from the table).
    ///
    /// # Safety
    /// `self` is a table [`flag_table`] returned (checked to lie in the JVM's flag array).
    unsafe fn find(&self, name: &str, want: FlagType) -> Result<Option<*mut u8>, String> {
        for k in 0..self.count {
            // SAFETY: flag k lies in the JVM's flag array of count entries of size bytes; the
            // offsets were checked to fall inside one entry.
            unsafe {
                let f = self.flags.add(k * self.size);
                if c_str(*(f.add(self.name_at) as *const *const c_char)) != Some(name.as_bytes()) {
                    continue;
                }
                let ok = match (self.type_at, want) {
                    (Some((at, true)), FlagType::Bool) => *(f.add(at) as *const i32) == 0,
                    (Some((at, true)), FlagType::Ccstr) => {
                        matches!(*(f.add(at) as *const i32), 8 | 9)
                    }
                    (Some((at, false)), _) => {
                        let ts = c_str(*(f.add(at) as *const *const c_char));
                        match want {
                            FlagType::Bool => ts == Some(b"bool".as_slice()),
                            FlagType::Ccstr => {
                                matches!(ts, Some(b"ccstr") | Some(b"ccstrlist"))
                            }
                        }
                    }
                    (None, FlagType::Bool) => true,
                    (None, FlagType::Ccstr) => false,
                };
                if !ok {
                    let what = match want {
                        FlagType::Bool => "a boolean",
                        FlagType::Ccstr => "a string",
                    };
                    return Err(format!("-XX:{name} is not {what} flag"));
                }
                let addr = *(f.add(self.addr_at) as *const *mut u8);
                if addr.is_null() {
                    return Err(format!("-XX:{name} has no value address"));
                }
                return Ok(Some(addr));
            }
        }
        Ok(None)
    }
}

/// Sets the boolean `-XX` flag `name` to `value`; returns its value before. An error (nothing
/// written) when the JVM's tables are not there or not as expected, or the flag is unknown.
pub fn set_bool_flag(name: &str, value: bool) -> Result<bool, String> {
    let t = flag_table()?;
    // SAFETY: t is from flag_table.
    let addr = unsafe { t.find(name, FlagType::Bool) }?
        .ok_or_else(|| format!("-XX:{name}: no such flag in this JVM"))?;
    // SAFETY: addr is the flag's value address, a bool (checked above).
    unsafe {
        let old = std::ptr::read_volatile(addr) != 0;
        std::ptr::write_volatile(addr, value as u8);
        Ok(old)
    }
}

/// The value of the boolean `-XX` flag `name`; None when this JVM has no such flag. An error
/// when the JVM's tables are not there or not as expected.
pub fn bool_flag(name: &str) -> Result<Option<bool>, String> {
    let t = flag_table()?;
    // SAFETY: t is from flag_table; the address is the flag's, a bool (checked).
    unsafe {
        Ok(t.find(name, FlagType::Bool)?
            .map(|addr| std::ptr::read_volatile(addr) != 0))
    }
}

/// The value of the string (ccstr) `-XX` flag `name` ("" when not set); None when this JVM has
/// no such flag. An error when the JVM's tables are not there or not as expected.
pub fn string_flag(name: &str) -> Result<Option<String>, String> {
    let t = flag_table()?;
    // SAFETY: t is from flag_table; the address is the flag's, a ccstr (const char*, checked),
    // null or a NUL-terminated string the JVM keeps for its life.
    unsafe {
        Ok(t.find(name, FlagType::Ccstr)?.map(|addr| {
            let p = std::ptr::read_volatile(addr as *const *const c_char);
            String::from_utf8_lossy(c_str(p).unwrap_or_default()).into_owned()
        }))
    }
}

/// The JVM's own options as it was given them (`Arguments::_jvm_args_array`: the command
/// line's, `JAVA_TOOL_OPTIONS`', `JDK_JAVA_OPTIONS`', an options file's, in order), as
/// `jcmd VM.command_line` lists them.
pub fn jvm_args() -> Result<Vec<String>, String> {
    let (mut array_addr, mut count_addr) = (None, None);
    struct_entries(&[b"Arguments"], |e| {
        match (e.field, e.is_static, e.type_string) {
            (b"_jvm_args_array", true, Some(b"char**")) => array_addr = Some(e.address),
            (b"_num_jvm_args", true, Some(b"int")) => count_addr = Some(e.address),
            _ => {}
        }
    })?;
    let missing = |what: &str| format!("VMStructs: no {what} for Arguments");
    let array_addr = array_addr
        .filter(|p| !p.is_null())
        .ok_or_else(|| missing("_jvm_args_array"))?;
    let count_addr = count_addr
        .filter(|p| !p.is_null())
        .ok_or_else(|| missing("_num_jvm_args"))?;
    // SAFETY: the addresses of Arguments' static fields _jvm_args_array (char**) and
    // _num_jvm_args (int), as the table says (their type strings checked).
    let (array, count) = unsafe {
        (
            *(array_addr as *const *const *const c_char),
            *(count_addr as *const i32),
        )
    };
    if !(0..100_000).contains(&count) || (count > 0 && array.is_null()) {
        return Err(format!("VMStructs: {count} JVM arguments"));
    }
    (0..count as usize)
        .map(|k| {
            // SAFETY: the array has count entries, each a NUL-terminated string (checked for
            // null) the JVM keeps for its life.
            unsafe { c_str(*array.add(k)) }
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .ok_or_else(|| format!("VMStructs: JVM argument {k} is null"))
        })
        .collect()
}

/// What the agent will do, as far as the flags below care.
pub struct Uses {
    /// The early class hook (classes seen from the first one loaded).
    pub early_hook: bool,
    /// java.lang.Thread is rewritten (cpu=times' fields, coverage's field under the early
    /// hook): one of the classes HotSpot's CDS/AOT writer cannot leave out of its archive.
    pub rewrites_thread: bool,
    /// Coverage alone (no profile, no rules file): `include=` can do without the early hook.
    pub coverage_only: bool,
}

/// The flags the agent cannot work with, read at `Agent_OnLoad` (HotSpot has parsed them and
/// applied its ergonomics by then): Err with the message that stops the JVM, naming the flag,
/// why and what to do instead; else the warnings to print. A JVM whose tables cannot be read
/// is not checked (nothing is guessed).
pub fn check_flags(uses: &Uses) -> Result<Vec<String>, String> {
    let string = |name: &str| string_flag(name).ok().flatten().unwrap_or_default();
    let bool = |name: &str| bool_flag(name).ok().flatten().unwrap_or(false);
    if uses.rewrites_thread {
        let output = string("AOTCacheOutput");
        let mode = string("AOTMode");
        let flag = if !output.is_empty() {
            Some(format!("-XX:AOTCacheOutput={output}"))
        } else if mode == "record" || mode == "create" {
            Some(format!("-XX:AOTMode={mode}"))
        } else {
            None
        };
        if let Some(flag) = flag {
            return Err(format!(
                "{flag}: HotSpot's AOT cache writer crashes the JVM (SIGSEGV at exit, no report \
                 or coverage data) on the classes this agent rewrites (java.lang.Thread); \
                 create the AOT cache without the agent (a run with the agent cannot use one \
                 anyway: HotSpot refuses aot-linked classes while a ClassFileLoadHook is in use)"
            ));
        }
    }
    if uses.early_hook {
        let instead = if uses.coverage_only {
            ", or an include= of application packages only (no java.*, jdk.* or sun.* \
             class: coverage then does without the early hook and CDS stays on)"
        } else {
            ""
        };
        // JDK 17: -Xshare:on sets RequireSharedSpaces; JDK 25 keeps it in no flag: the last
        // -Xshare: given
        let xshare_on = match bool_flag("RequireSharedSpaces") {
            Ok(Some(on)) => on,
            _ => jvm_args().ok().is_some_and(|a| {
                a.iter().rev().find_map(|a| a.strip_prefix("-Xshare:")) == Some("on")
            }),
        };
        if xshare_on {
            return Err(format!(
                "-Xshare:on: this agent's early class hook turns HotSpot's class-data sharing \
                 (CDS) off, which -Xshare:on makes a start failure; use -Xshare:auto (the \
                 default: the JVM runs without CDS){instead}"
            ));
        }
        if string("AOTMode") == "on" {
            return Err(format!(
                "-XX:AOTMode=on: this agent's early class hook makes HotSpot refuse the AOT \
                 cache, which AOTMode=on makes a start failure; use -XX:AOTMode=auto (the \
                 default: the JVM runs without the cache){instead}"
            ));
        }
    }
    let mut warnings: Vec<String> = ["ExitOnOutOfMemoryError", "CrashOnOutOfMemoryError"]
        .into_iter()
        .filter(|f| bool(f))
        .map(|f| {
            let exits = if f.starts_with("Exit") {
                "exits"
            } else {
                "crashes"
            };
            format!(
                "-XX:+{f}: if the heap runs out, the JVM {exits} without telling agents: no \
                 report/coverage data is written"
            )
        })
        .collect();
    // -Xrs sets it: HotSpot leaves SIGTERM, SIGINT, SIGHUP and SIGQUIT to their default action
    if bool("ReduceSignalUsage") {
        warnings.push(
            "-Xrs (-XX:+ReduceSignalUsage): SIGTERM, SIGINT (Ctrl-C) and SIGHUP end the JVM \
             without telling agents (no report/coverage data is written), and SIGQUIT kills it \
             (no snapshot)"
                .to_string(),
        );
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_jvm_it_is_an_error_not_a_crash() {
        // the test binary has no libjvm.so: every lookup fails cleanly
        let e = set_bool_flag("DontCompileHugeMethods", false).unwrap_err();
        assert!(e.contains("gHotSpotVM"), "{e}");
    }

    #[test]
    fn outside_a_jvm_reads_are_errors_and_nothing_is_refused() {
        for e in [
            bool_flag("ExitOnOutOfMemoryError").unwrap_err(),
            string_flag("AOTMode").unwrap_err(),
            jvm_args().unwrap_err(),
        ] {
            assert!(e.contains("gHotSpotVM"), "{e}");
        }
        // tables that cannot be read: nothing is guessed, the JVM is not stopped
        let uses = Uses {
            early_hook: true,
            rewrites_thread: true,
            coverage_only: false,
        };
        assert_eq!(check_flags(&uses), Ok(vec![]));
    }
}
