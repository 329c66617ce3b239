//! Every kind of rule-file error, with its exact message and position (`file:line:col`).
use bci_rewriter::Rules;

fn err(src: &str) -> String {
    match Rules::parse(src, "t.toml") {
        Ok(_) => "ok".to_string(),
        Err(e) => e.to_string(),
    }
}

/// (rule file, the exact error). Written out in full: the positions are what users see.
const CASES: &[(&str, &str)] = &[
        // descriptors: JVMS 4.3.3 method descriptors (with * and ?), checked at parse time
        (
            "[[rule]]\nname = \"r\"\nclass = \"App\"\ndescriptor = \"(I\"\ncount = true\n",
            "t.toml:4:17: rule \"r\": bad descriptor pattern \"(I\": incomplete method descriptor: expected a parameter type (B C D F I J S Z, L<class>; or [<type>) or ')' after it (a descriptor is \"(<parameter types>)<return type>\", e.g. \"(I)V\")",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"App\"\ndescriptor = \"(Q)V\"\ncount = true\n",
            "t.toml:4:16: rule \"r\": bad descriptor pattern \"(Q)V\": 'Q' at character 2 cannot be part of a method descriptor: expected a parameter type (B C D F I J S Z, L<class>; or [<type>) or ')'",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"App\"\ndescriptor = \"(int)int\"\ncount = true\n",
            "t.toml:4:16: rule \"r\": bad descriptor pattern \"(int)int\": 'i' at character 2 cannot be part of a method descriptor: expected a parameter type (B C D F I J S Z, L<class>; or [<type>) or ')'; descriptors are in the JVM's syntax (JVMS 4.3.3), e.g. \"(ILjava/lang/String;)V\", not Java's \"(int, String)void\"",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"App\"\ndescriptor = \"(I)*X\"\ncount = true\n",
            "t.toml:4:20: rule \"r\": bad descriptor pattern \"(I)*X\": incomplete method descriptor: expected more of the class name, '/' or the ';' that ends it after it (a descriptor is \"(<parameter types>)<return type>\", e.g. \"(I)V\")",
        ),
        (
            "[[rule]]\nclasses = [\"App\"]\ndescriptors = [\"*\", \"()VV\"]\nprobes = [\"enter\"]\n",
            "t.toml:3:25: bad descriptor pattern \"()VV\": 'V' at character 4 cannot be part of a method descriptor: expected nothing (the descriptor is complete)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"App\"\ncount = true\ncall = \"App.fib(I)I\"\n",
            "t.toml:5:16: rule \"r\": call \"App.fib(I)I\": `call` takes no descriptor: expected \"Owner.method\" (e.g. \"java.util.HashMap.put\"; it acts on the calls of every method of that name, whatever its descriptor)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"App\"\nmethod = \"fib(I)I\"\ncount = true\n",
            "t.toml:4:14: rule \"r\": method \"fib(I)I\": `method` is a method name, without a descriptor; select the descriptor with descriptor = \"(I)I\"",
        ),
        // a '.' is in no JVM method name (JVMS 4.2.2), a class name has no spaces around it
        (
            "[[rule]]\nname = \"r\"\nclass = \"**\"\nmethod = \"Main.fib\"\ncount = true\n",
            "t.toml:4:15: rule \"r\": method \"Main.fib\": a method name has no '.' (JVMS 4.2.2): name the class with `class`, e.g. class = \"Main\", method = \"fib\"",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"a.Main \"\ncount = true\n",
            "t.toml:3:9: rule \"r\": class \"a.Main \" has spaces at its start or end: a class name has none; write class = \"a.Main\"",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \" a.*\"\ncount = true\n",
            "t.toml:3:9: rule \"r\": class \" a.*\" has spaces at its start or end: a class name has none; write class = \"a.*\"",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\ncolour = \"red\"\n",
            "t.toml:5:1: unknown field `colour`, expected one of `name`, `classes`, `exclude_classes`, `methods`, `exclude_methods`, `descriptors`, `probes`, `class`, `method`, `descriptor`, `access`, `class_annotation`, `annotation`, `extends`, `implements`, `exclude_class`, `exclude_method`, `at`, `line`, `call`, `count`, `time`, `trace`, `args`, `return`, `exception`, `tostring`, `max_string`, `min_duration`, `sample`, `stack`",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.[ab].*\"\ntrace = true\n",
            "t.toml:3:9: rule \"r\": bad class pattern \"com.[ab].*\": '[' is not allowed (globs use * ** ?; a regular expression is written /.../)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"/com.(acme/\"\ntrace = true\n",
            "t.toml:3:9: rule \"r\": bad regular expression /com.(acme/: found open group without closing ')'",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.***\"\ntrace = true\n",
            "t.toml:3:9: rule \"r\": bad class pattern \"com.***\": *** (use * or **)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\nmethod = \"\"\ntrace = true\n",
            "t.toml:4:10: rule \"r\": empty method pattern matches nothing",
        ),
        // patterns no name can match (found by the hostile-inputs hunt Z, F4: accepted, and
        // the rule then matched nothing, silently)
        (
            "[[rule]]\nname = \"r\"\nclass = \"//\"\ncount = true\n",
            "t.toml:3:9: rule \"r\": bad class pattern \"//\": an empty regular expression matches no name; expected /regex/ with the expression between the slashes",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"X\\u0000Y\"\ncount = true\n",
            "t.toml:3:9: rule \"r\": bad class pattern \"X\\0Y\": control character U+0000: no name has one",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\nmethod = \"a\\tb\"\ncount = true\n",
            "t.toml:4:10: rule \"r\": bad method pattern \"a\\tb\": control character U+0009: no name has one",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\nexclude_method = [\"Foo.bar\"]\ncount = true\n",
            "t.toml:4:19: rule \"r\": bad exclude_method pattern \"Foo.bar\": '.': no method name has one (JVMS 4.2.2; '<' and '>' only in <init> and <clinit>) (a regular expression is written /.../)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com..acme.*\"\ncount = true\n",
            "t.toml:3:9: rule \"r\": bad class pattern \"com..acme.*\": an empty package level ('..', or '.' at its start or end): a class pattern is a dotted name or glob, e.g. \"com.acme.*\"",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\nexclude_class = [\"com.acme.\"]\ncount = true\n",
            "t.toml:4:18: rule \"r\": bad exclude_class pattern \"com.acme.\": an empty package level ('..', or '.' at its start or end): a class pattern is a dotted name or glob, e.g. \"com.acme.*\"",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\nextends = \".Base\"\ncount = true\n",
            "t.toml:4:11: rule \"r\": bad extends pattern \".Base\": an empty package level ('..', or '.' at its start or end): a class pattern is a dotted name or glob, e.g. \"com.acme.*\"",
        ),
        (
            "[[rule]]\nclasses = []\nprobes = [\"enter\"]\n",
            "t.toml:2:11: `classes` is empty: it would match nothing; expected at least one pattern, e.g. classes = [\"com.acme.*\"] (without `classes` a rule takes every one)",
        ),
        (
            "[[rule]]\nclasses = [\"*\"]\nmethods = []\nprobes = [\"enter\"]\n",
            "t.toml:3:11: `methods` is empty: it would match nothing; expected at least one pattern, e.g. methods = [\"get*\"] (without `methods` a rule takes every one)",
        ),
        (
            "[[rule]]\ndescriptors = []\nprobes = [\"enter\"]\n",
            "t.toml:2:15: `descriptors` is empty: it would match nothing; expected at least one pattern, e.g. descriptors = [\"(I)*\"] (without `descriptors` a rule takes every one)",
        ),
        (
            "[[rule]]\nclasses = [\"\"]\nprobes = [\"enter\"]\n",
            "t.toml:2:12: bad pattern \"\" in `classes`: an empty pattern matches no class name",
        ),
        (
            "[[rule]]\nclasses = [\"*\"]\nmethods = [\"\"]\nprobes = [\"enter\"]\n",
            "t.toml:3:12: bad pattern \"\" in `methods`: an empty pattern matches no method name",
        ),
        (
            "[[rule]]\nclasses = [\"a\\u0001\"]\nprobes = [\"enter\"]\n",
            "t.toml:2:12: bad pattern \"a\\u{1}\" in `classes`: control character U+0001: no class name has one",
        ),
        (
            "[[rule]]\nclasses = [\"com.[ab].*\"]\nprobes = [\"enter\"]\n",
            "t.toml:2:12: bad pattern \"com.[ab].*\" in `classes`: '[' is not supported (only * and ? are wildcards; no class name contains it)",
        ),
        (
            "[[rule]]\nclasses = [\"*\"]\nmethods = [\"Foo.bar\"]\nprobes = [\"enter\"]\n",
            "t.toml:3:12: bad pattern \"Foo.bar\" in `methods`: '.': no method name has one (JVMS 4.2.2; '<' and '>' only in <init> and <clinit>)",
        ),
        (
            "[[rule]]\nclasses = [\"*\"]\nmethods = [\"<init>\", \"get<T>\"]\nprobes = [\"enter\"]\n",
            "t.toml:3:22: bad pattern \"get<T>\" in `methods`: '<': no method name has one (JVMS 4.2.2; '<' and '>' only in <init> and <clinit>)",
        ),
        (
            "[[rule]]\nclasses = [\"*\"]\nexclude_methods = [\"{main,f}\"]\nprobes = [\"enter\"]\n",
            "t.toml:3:20: bad pattern \"{main,f}\" in `exclude_methods`: '{' is not supported (only * and ? are wildcards; no method name contains it)",
        ),
        (
            "[[rule]]\nexclude_classes = [\" com.acme.*\"]\nprobes = [\"enter\"]\n",
            "t.toml:2:20: bad pattern \" com.acme.*\" in `exclude_classes`: a space at its start or end: no class name has one",
        ),
        (
            "[[rule]]\nexclude_classes = [\"com..gen.*\"]\nprobes = [\"enter\"]\n",
            "t.toml:2:20: bad pattern \"com..gen.*\" in `exclude_classes`: an empty package level ('..', or '.' at its start or end): a class pattern is a dotted name or glob, e.g. \"com.acme.*\"",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ndescriptor = \"I)V\"\ntrace = true\n",
            "t.toml:4:14: rule \"r\": bad descriptor pattern \"I)V\": a method descriptor starts with '(' (e.g. \"(I)*\")",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nmin_duration = \"fast\"\n",
            "t.toml:5:16: rule \"r\": bad min_duration \"fast\": expected a number with ns, us, ms or s (e.g. \"500us\")",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nsample = 0\n",
            "t.toml:5:10: rule \"r\": bad sample 0: expected 1 to 1073741824",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nstack = 100\n",
            "t.toml:5:9: rule \"r\": bad stack 100: expected 0 to 64",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nmax_string = 0\n",
            "t.toml:5:14: rule \"r\": bad max_string 0: expected 1 to 65536",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ncount = true\nline = 0\n",
            "t.toml:5:8: rule \"r\": bad line 0: expected a source line from 1 to 65535",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\naccess = [\"public\", \"publik\"]\n",
            "t.toml:5:21: rule \"r\": unknown access flag \"publik\"; expected one of: public, private, protected, static, final, synchronized, bridge, varargs, synthetic (each may be negated with !)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\naccess = [\"static\", \"!static\"]\n",
            "t.toml:5:11: rule \"r\": an access flag is both required and excluded",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nat = [\"middle\"]\n",
            "t.toml:5:7: rule \"r\": unknown location \"middle\" in `at`; expected entry, exit, exception (or line = N, call = \"Owner.method\")",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nat = []\n",
            "t.toml:5:6: rule \"r\": `at` is empty",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ncount = true\ncall = \"foo\"\n",
            "t.toml:5:8: rule \"r\": bad call \"foo\": expected \"Owner.method\" (e.g. \"java.util.HashMap.put\")",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ncount = true\ncall = \"a.b.C.[x]\"\n",
            "t.toml:5:8: rule \"r\": bad call method pattern \"[x]\": '[' is not allowed (globs use * ** ?; a regular expression is written /.../)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nprobes = [\"enter\"]\n",
            "t.toml:3:9: `class` is a tracing-rule key and `probes` makes a probe rule: a rule is one or the other (conflicting actions)",
        ),
        (
            "[[rule]]\nprobes = [\"enter\"]\ntrace = true\n",
            "t.toml:3:9: `trace` is a tracing-rule key and `probes` makes a probe rule: a rule is one or the other (conflicting actions)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntime = true\nat = [\"entry\"]\n",
            "t.toml:4:8: rule \"r\": `time` needs a call's end (at = exit or exception); it conflicts with this location",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ncount = true\nmin_duration = \"1ms\"\n",
            "t.toml:5:16: rule \"r\": `min_duration` filters calls by duration: it needs time or trace at a call's end (at = exit or exception)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntime = true\nat = [\"entry\"]\nmin_duration = \"1ms\"\n",
            "t.toml:4:8: rule \"r\": `time` needs a call's end (at = exit or exception); it conflicts with this location",
        ),
        // min_duration decides at a call's end: entry events would be written for every call
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nat = [\"entry\", \"exit\"]\nmin_duration = \"10ms\"\n",
            "t.toml:6:16: rule \"r\": `min_duration` keeps a call once it has ended, but its entry event is written when it starts: with at = \"entry\" every call's entry would be written; drop \"entry\" from `at` (the event at a call's end carries its duration and arguments)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ncount = true\nargs = true\n",
            "t.toml:5:8: rule \"r\": `args` says what a trace event captures; it needs trace = true",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntime = true\ntostring = true\n",
            "t.toml:5:12: rule \"r\": `tostring` says what a trace event captures; it needs trace = true",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ncount = true\nsample = 2\n",
            "t.toml:5:10: rule \"r\": `sample` applies to trace events; it needs trace = true",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ncount = true\ncall = \"a.B.c\"\nat = [\"exit\"]\n",
            "t.toml:6:6: rule \"r\": with `call`, `at` is [\"before\"] or [\"after\"] (the side of the call the rule acts on)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ncount = true\nline = 3\ncall = \"a.B.c\"\n",
            "t.toml:6:8: rule \"r\": `line` and `call` conflict (a rule acts at one kind of location)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ncount = true\nat = [\"entry\"]\nline = 3\n",
            "t.toml:6:8: rule \"r\": `line` and `at` conflict (a rule acts at one kind of location)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntime = true\nline = 3\n",
            "t.toml:4:8: rule \"r\": `time` needs a call's end (at = exit or exception); it conflicts with this location",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\n\n",
            "t.toml:1:1: rule \"r\" has no action; expected count = true, time = true or trace = true",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = false\n",
            "t.toml:1:1: rule \"r\" has no action; expected count = true, time = true or trace = true",
        ),
        (
            "[[rule]]\nclass = \"a.B\"\ntrace = true\n",
            "t.toml:1:1: rule 1 has no name (name = \"...\")",
        ),
        (
            "[[rule]]\nname = \"\"\nclass = \"a.B\"\ntrace = true\n",
            "t.toml:2:8: a rule name must be non-empty text without control characters",
        ),
        (
            "[[rule]]\nname = \"r\"\ntrace = true\n",
            "t.toml:1:1: rule \"r\" has no `class` (e.g. class = \"com.acme.**\")",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\n\n[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ncount = true\n",
            "t.toml:7:8: a rule named \"r\" is defined already (rule names must be unique; the first is at line 1)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nclasses = [\"*\"]\n",
            "t.toml:5:11: rule \"r\": `classes` belongs to probe rules (with `probes`); tracing rules use class, method, descriptor, exclude_class, exclude_method",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = \"yes\"\n",
            "t.toml:4:9: invalid type: string \"yes\", expected a boolean",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nexclude_class = [\"a.[b\"]\n",
            "t.toml:5:18: rule \"r\": bad exclude_class pattern \"a.[b\": '[' is not allowed (globs use * ** ?; a regular expression is written /.../)",
        ),
        (
            "[rule]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\n",
            "t.toml:1:1: `rule` is a single table here: rules are written as [[rule]] tables (two brackets: each [[rule]] adds one rule)",
        ),
        (
            "# rules\n\nrule = { name = \"r\", class = \"com.acme.*\", trace = true }\n",
            "t.toml:3:8: `rule` is a single table here: rules are written as [[rule]] tables (two brackets: each [[rule]] adds one rule)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nmin_duration = \"99999999999999s\"\n",
            "t.toml:5:16: rule \"r\": min_duration \"99999999999999s\" is too large: at most 9223372036s (2^63-1 ns, about 292 years)",
        ),
        (
            "[[rule]]\nname = \"r\"\nclass = \"com.acme.*\"\ntrace = true\nmin_duration = \"99999999999999999999us\"\n",
            "t.toml:5:16: rule \"r\": min_duration \"99999999999999999999us\" is too large: at most 9223372036854775us (2^63-1 ns, about 292 years)",
        ),
];

#[test]
fn every_error_kind_has_its_message_and_position() {
    for (src, want) in CASES {
        assert_eq!(&err(src), want, "source:\n{src}");
    }
}

#[test]
fn valid_files_parse_and_cpu_times_still_loads() {
    let ok = "[[rule]]\nname = \"a\"\nclass = \"com.acme.**\"\nmethod = \"/get[A-Z].*/\"\ndescriptor = \"()*\"\naccess = [\"public\", \"!static\"]\ntime = true\nmin_duration = \"2ms\"\n\n[[rule]]\nname = \"b\"\nclass = \"a.B\"\ncall = \"java.util.HashMap.put\"\ntrace = true\nstack = 3\n";
    let r = Rules::parse(ok, "ok.toml").unwrap();
    assert_eq!(r.trace_rules().len(), 2);
    assert!(!r.has_probe_rules());
    let cpu = Rules::parse(include_str!("../../rules/cpu-times.toml"), "cpu-times.toml").unwrap();
    assert!(cpu.has_probe_rules() && cpu.trace_rules().is_empty());
}
