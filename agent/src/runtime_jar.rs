//! The classes of the runtime jar (`bci runtime-jar OUT`): bci/runtime/Probes, its thread
//! state, the ended threads' aggregate, bci/runtime/Cov (coverage counters) and
//! bci/runtime/Offline (method ids of offline-instrumented classes, standalone recording), as
//! build.rs compiled them. The agent defines the same Probes (rules naming it)
//! and Offline at VMInit.

pub const OFFLINE: &str = "bci/runtime/Offline";
pub const OFFLINE_CLASS: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/java/bci/runtime/Offline.class"));

/// bci/runtime/Probes forwarding every probe to java.lang.BciProbes (java/forward/): what the
/// agent defines at VMInit with its built-in runtime, for offline-instrumented classes.
pub const FORWARD_PROBES_CLASS: &[u8] = include_bytes!(concat!(
    env!("OUT_DIR"),
    "/java-forward/bci/runtime/Probes.class"
));

/// (path in the jar, class bytes): every class build.rs compiled into bci/runtime.
pub const CLASSES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/runtime_jar_classes.rs"));
