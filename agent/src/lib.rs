//! bciagent: a JVMTI agent giving exact `cpu=times` profiles (HPROF's format) by rewriting
//! classes at load time.
//!
//! Modules: [`sys`] raw JNI/JVMTI bindings; [`jvm`] safe wrappers; [`callbacks`] the `extern`
//! entry points (each behind `catch_unwind`); [`runtime`] the Java probe class and its data;
//! [`options`], [`outfile`], [`registry`], [`report`], [`rewrite`] are safe Rust without JVM pointers.
//! `unsafe` appears only in sys, jvm, runtime, callbacks and hotspot (the JVM's flag table), each block with a SAFETY line.

pub mod callbacks;
pub mod coverage;
pub mod hotspot;
pub mod jvm;
pub mod options;
pub mod outfile;
pub mod registry;
pub mod report;
pub mod rewrite;
pub mod runtime;
pub mod runtime_jar;
pub mod sys;
pub mod trace;
