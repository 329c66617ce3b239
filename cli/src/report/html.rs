//! The HTML report: a self-contained directory (no network: the style sheet and the small
//! sorting script are files of the directory) that works from `file://`.
//!
//! ```text
//! index.html                  packages, with the totals
//! <package>/index.html        its classes and source files (`default` for the default package)
//! <package>/<Class>.html      its methods, each linked to its first line
//! <package>/<File>.java.html  the source, each line coloured (covered, partly, missed) with
//!                             its hit count in a gutter and a branch marker whose tooltip says
//!                             "2 of 4 branches missed"
//! ```
//!
//! Names from the class files are escaped into file names ([`file_name`]: `/`, `%` and other
//! characters as `%XX`, `..` never a path), so a SourceFile such as `compiler/__init__.py`
//! (Jython) is the page `compiler%2F__init__.py.html` beside the others.
//!
//! With `--per-test`, a source line's tooltip names the tests that ran it.
//!
//! The pages are written as one set ([`Staged`]): all in place, or, after a failure, none
//! (the directory as it was).
//!
//! Every table sorts by a click on a column's heading; `#sort=N` (or `#sort=-N`, descending)
//! in a page's address sorts it by column N on load.

use super::staged::Staged;
use super::{dotted_package, esc, simple_name, Package, Report, SourceFile};
use bci_rewriter::coverage::analysis::{Counter, Counters, Line, Status};
use bci_rewriter::coverage::lcov::line_count;
use std::fmt::Write;
use std::path::Path;

const CSS: &str = "\
body{font-family:sans-serif;font-size:14px;margin:1em 2em;color:#222}\
h1{font-size:20px}.crumbs{margin-bottom:1em}.crumbs a{color:#036}\
table.cov{border-collapse:collapse;margin-bottom:1em}\
table.cov th,table.cov td{padding:2px 8px;white-space:nowrap;border-bottom:1px solid #ddd;text-align:right}\
table.cov th:first-child,table.cov td:first-child{text-align:left}\
table.cov thead th{background:#eee;cursor:pointer;user-select:none}\
table.cov thead th.up:after{content:' \\25B2'}table.cov thead th.down:after{content:' \\25BC'}\
table.cov tfoot td{font-weight:bold;background:#f6f6f6}\
.bar{display:inline-block;height:10px;width:80px;background:#d33;vertical-align:middle}\
.bar span{display:block;height:10px;background:#3a3}\
table.src{border-collapse:collapse;font-family:monospace;font-size:13px}\
table.src td{padding:0 6px;white-space:pre;vertical-align:top}\
table.src td.nr{color:#888;text-align:right}table.src td.hits{text-align:right;color:#555}\
tr.fc td.code{background:#cfc}tr.pc td.code{background:#ffc}tr.nc td.code{background:#fbb}\
td.br span{cursor:help;font-weight:bold}td.br span.pm{color:#b80}td.br span.nm{color:#c00}\
td.br span.ok{color:#080}.note{color:#666}";

const JS: &str = r#"(function(){
function key(td){var v=td.getAttribute('data-v');return v===null?td.textContent:parseFloat(v);}
function sort(t,col,desc){var b=t.tBodies[0];var rows=Array.prototype.slice.call(b.rows);
rows.sort(function(x,y){var a=key(x.cells[col]),c=key(y.cells[col]);var r=a<c?-1:a>c?1:0;return desc?-r:r;});
rows.forEach(function(r){b.appendChild(r);});
var hs=t.tHead.rows[0].cells;for(var i=0;i<hs.length;i++){hs[i].className=i===col?(desc?'down':'up'):'';}}
document.addEventListener('DOMContentLoaded',function(){
var ts=document.querySelectorAll('table.cov');
ts.forEach(function(t){var hs=t.tHead.rows[0].cells;for(var i=0;i<hs.length;i++){(function(i){
hs[i].addEventListener('click',function(){sort(t,i,hs[i].className==='up');});})(i);}});
var m=/sort=(-?)(\d+)/.exec(location.hash);if(m&&ts.length){sort(ts[0],parseInt(m[2],10),m[1]==='-');}
});})();"#;

fn page(title: &str, up: &str, crumbs: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title>\
         <link rel=\"stylesheet\" href=\"{up}bci-report.css\">\
         <script src=\"{up}bci-sort.js\"></script></head><body>\
         <div class=\"crumbs\">{crumbs}</div><h1>{t}</h1>\n{body}\n\
         <p class=\"note\">Made by bci {v}: hit counts are exact.</p></body></html>\n",
        t = esc(title),
        v = env!("CARGO_PKG_VERSION")
    )
}

/// Cells of a counter: a bar, the percentage, and `missed of total`. A counter with nothing to
/// count (no branches) has no bar, only `-`: a bar would show it all missed.
fn cells(o: &mut String, c: Counter) {
    if c.total() == 0 {
        o.push_str("<td data-v=\"-1.000\">-</td><td data-v=\"0\">0 of 0</td>");
        return;
    }
    let p = c.covered as f64 * 100.0 / c.total() as f64;
    let _ = write!(
        o,
        "<td data-v=\"{p:.3}\"><span class=\"bar\"><span style=\"width:{p:.0}%\"></span></span> {p:.1}%</td>\
         <td data-v=\"{}\">{} of {}</td>",
        c.missed, c.missed, c.total()
    );
}

const HEAD: &str = "<th>Instructions</th><th>Missed</th><th>Branches</th><th>Missed</th>\
    <th>Lines</th><th>Missed</th><th>Methods</th><th>Missed</th>";

fn counter_cells(o: &mut String, c: &Counters) {
    for k in [c.instructions, c.branches, c.lines, c.methods] {
        cells(o, k);
    }
}

fn table(o: &mut String, first: &str, extra_head: &str, rows: &str, total: &Counters, extra: bool) {
    let _ = write!(
        o,
        "<table class=\"cov\"><thead><tr><th>{first}</th>{HEAD}{extra_head}</tr></thead><tbody>{rows}</tbody><tfoot><tr><td>Total</td>"
    );
    counter_cells(o, total);
    if extra {
        cells(o, total.classes);
    }
    o.push_str("</tr></tfoot></table>");
}

/// A name from a class file (package, class, SourceFile) as one file name: ASCII letters,
/// digits, `. _ - $ +` and non-ASCII characters as they are, every other character (`/`, `\`,
/// `%`, spaces, controls …) as `%XX` per UTF-8 byte, and a name that would be `.` or `..` with
/// its dots escaped, so no name leaves its directory or makes one; `reserved` names (the report's
/// own files) get their first character escaped. A name longer than 200 bytes keeps its first
/// 150 and a hash of the whole (`~` and 16 hex digits): file systems allow 255. The mapping is
/// one to one (a `%` or `~` in a name is escaped). [`href`] links to such a file.
fn file_name(name: &str, suffix: &str, reserved: &[&str]) -> String {
    let mut o = String::with_capacity(name.len() + suffix.len());
    for ch in name.chars() {
        let keep = ch.is_ascii_alphanumeric()
            || matches!(ch, '.' | '_' | '-' | '$' | '+')
            || (!ch.is_ascii() && !ch.is_control());
        if keep {
            o.push(ch);
        } else {
            for b in ch.encode_utf8(&mut [0; 4]).bytes() {
                let _ = write!(o, "%{b:02X}");
            }
        }
    }
    if o.is_empty() || o.chars().all(|c| c == '.') {
        o = o.replace('.', "%2E");
    }
    if o.len() > 200 {
        let mut cut = 150;
        while !o.is_char_boundary(cut) {
            cut -= 1;
        }
        let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
        o = format!("{}~{h:016x}", &o[..cut]);
    }
    o.push_str(suffix);
    if reserved.contains(&o.as_str()) {
        let first = o.remove(0);
        o = format!("%{:02X}{o}", first as u32);
    }
    o
}

/// The relative address of a file named by [`file_name`] (its `%` escaped for the URL).
fn href(file: &str) -> String {
    esc(&file.replace('%', "%25"))
}

/// The report's own files at its top, which no package directory may be named.
const TOP_FILES: [&str; 3] = ["index.html", "bci-report.css", "bci-sort.js"];

/// The directory name of a package (`a.b`; `default` for the default package).
fn package_dir(p: &str) -> String {
    if p.is_empty() {
        "default".into()
    } else {
        file_name(&p.replace('/', "."), "", &TOP_FILES)
    }
}

/// The page of a class in its package directory (`C$Inner.html`).
fn class_page_name(c: &str) -> String {
    file_name(c.rsplit('/').next().unwrap_or(c), ".html", &["index.html"])
}

/// The page of a source file in its package directory (`C.java.html`). A class's name has no
/// `.` (JVMS 4.2.2), so a source file name without one (`index`, or `C` beside the class `C`)
/// gets an escaped `.` (`%2E`) at its end to stay apart from the class pages and the index.
fn source_page_name(f: &str) -> String {
    if f.contains('.') {
        file_name(f, ".html", &["index.html"])
    } else {
        file_name(f, "%2E.html", &[])
    }
}

/// Writes the report into `dir`, all of it or nothing ([`Staged`]): a page that cannot be
/// written leaves `dir` as it was (absent, or the previous report whole) and is the error,
/// prefixed `--html DIR: `. `Ok`: warnings.
pub fn write(r: &Report, packages: &[Package<'_>], dir: &Path) -> Result<Vec<String>, String> {
    let named = |e: String| format!("--html {}: {e}", dir.display());
    let mut s = Staged::new(dir).map_err(named)?;
    let mut notes = SourceNotes::default();
    match pages(r, packages, dir, &mut s, &mut notes) {
        Ok(()) => s.commit().map(|mut w| {
            w.extend(notes.warnings());
            w
        }),
        Err(e) => Err(s.abort(e)),
    }
    .map_err(named)
}

/// Source files whose text needed more than decoding as said ([`encoding::Note`]), for one
/// warning each kind.
#[derive(Default)]
struct SourceNotes {
    read_as_1252: Vec<String>,
    invalid: Vec<String>,
}

impl SourceNotes {
    fn warnings(&self) -> Vec<String> {
        let list = |files: &[String]| {
            let mut some: Vec<&str> = files.iter().take(5).map(String::as_str).collect();
            if files.len() > 5 {
                some.push("…");
            }
            some.join(", ")
        };
        let mut w = Vec::new();
        if !self.read_as_1252.is_empty() {
            w.push(format!(
                "{} not UTF-8, read as windows-1252 (Latin-1): {}; give \
                 --source-encoding NAME (as javac's -encoding) if {} in another",
                match self.read_as_1252.len() {
                    1 => "1 source file is".to_string(),
                    n => format!("{n} source files are"),
                },
                list(&self.read_as_1252),
                if self.read_as_1252.len() == 1 {
                    "it is"
                } else {
                    "they are"
                }
            ));
        }
        if !self.invalid.is_empty() {
            w.push(format!(
                "{} not valid UTF-8 as --source-encoding says: {}; the bytes \
                 that are not are shown as U+FFFD",
                match self.invalid.len() {
                    1 => "1 source file is".to_string(),
                    n => format!("{n} source files are"),
                },
                list(&self.invalid)
            ));
        }
        w
    }
}

fn pages(
    r: &Report,
    packages: &[Package<'_>],
    dir: &Path,
    s: &mut Staged,
    notes: &mut SourceNotes,
) -> Result<(), String> {
    s.write(&dir.join("bci-report.css"), CSS)?;
    s.write(&dir.join("bci-sort.js"), JS)?;
    let total = Report::total(packages);
    let mut rows = String::new();
    for p in packages {
        let _ = write!(
            rows,
            "<tr><td><a href=\"{}/index.html\">{}</a></td>",
            href(&package_dir(&p.name)),
            esc(&dotted_package(&p.name))
        );
        counter_cells(&mut rows, &p.counters);
        cells(&mut rows, p.counters.classes);
        rows.push_str("</tr>");
    }
    let mut body = String::new();
    table(
        &mut body,
        "Package",
        "<th>Classes</th><th>Missed</th>",
        &rows,
        &total,
        true,
    );
    let _ = write!(
        body,
        "<p class=\"note\">{}, {}.</p>",
        crate::io::count(r.classes.len(), "class", "classes"),
        crate::io::count(r.sessions.len(), "session", "sessions")
    );
    if let Some(note) = r.too_big_note() {
        let _ = write!(body, "<p class=\"note\">{}.</p>", esc(&note));
    }
    if let Some(note) = r.uncovered_note() {
        let _ = write!(body, "<p class=\"note\">{}.</p>", esc(&note));
    }
    if let Some(note) = r.per_test.as_ref().and_then(|pt| pt.overlap_note()) {
        let _ = write!(body, "<p class=\"note\">Per test: {}.</p>", esc(&note));
    }
    if !r.stale.is_empty() {
        body.push_str(
            "<p>Stale data (from another build of the class, left out of the counts):</p><ul>",
        );
        for s in &r.stale {
            let files: Vec<String> = s.files.iter().map(|p| p.display().to_string()).collect();
            let _ = write!(
                body,
                "<li>{} in {}",
                esc(&s.class.replace('/', ".")),
                esc(&files.join(", "))
            );
            if let Some((theirs, shown)) = &s.other_entry {
                let _ = write!(
                    body,
                    " (of {}; the report shows {})",
                    esc(theirs),
                    esc(shown)
                );
            }
            body.push_str("</li>");
        }
        body.push_str("</ul>");
    }
    s.write(&dir.join("index.html"), &page(&r.title, "", "", &body))?;
    for p in packages {
        let pd = dir.join(package_dir(&p.name));
        s.dir(&pd)?;
        let pname = dotted_package(&p.name);
        let crumbs = format!(
            "<a href=\"../index.html\">{}</a> &gt; {}",
            esc(&r.title),
            esc(&pname)
        );
        let mut rows = String::new();
        for c in &p.classes {
            let _ = write!(
                rows,
                "<tr><td><a href=\"{}\">{}</a></td>",
                href(&class_page_name(&c.name)),
                esc(&simple_name(&c.name))
            );
            counter_cells(&mut rows, &c.counters);
            rows.push_str("</tr>");
        }
        let mut body = String::new();
        table(&mut body, "Class", "", &rows, &p.counters, false);
        let mut rows = String::new();
        for f in &p.files {
            let _ = write!(
                rows,
                "<tr><td><a href=\"{}\">{}</a></td>",
                href(&source_page_name(&f.name)),
                esc(&f.name)
            );
            counter_cells(&mut rows, &f.counters);
            rows.push_str("</tr>");
        }
        if !p.files.is_empty() {
            table(&mut body, "Source file", "", &rows, &p.counters, false);
        }
        s.write(&pd.join("index.html"), &page(&pname, "../", &crumbs, &body))?;
        for c in &p.classes {
            let cname = simple_name(&c.name);
            let crumbs = format!(
                "<a href=\"../index.html\">{}</a> &gt; <a href=\"index.html\">{}</a> &gt; {}",
                esc(&r.title),
                esc(&pname),
                esc(&cname)
            );
            let mut rows = String::new();
            for m in &c.methods {
                let label = format!("{}{}", m.name, m.desc);
                match (&c.source_file, m.first_line) {
                    (Some(sf), Some(l)) => {
                        let _ = write!(
                            rows,
                            "<tr><td><a href=\"{}#L{l}\">{}</a></td>",
                            href(&source_page_name(sf)),
                            esc(&label)
                        );
                    }
                    _ => {
                        let _ = write!(rows, "<tr><td>{}</td>", esc(&label));
                    }
                }
                counter_cells(&mut rows, &m.counters);
                let _ = write!(rows, "<td data-v=\"{0}\">{0}</td></tr>", m.entries);
            }
            let mut body = String::new();
            if let Some((_, n)) = r.too_big.iter().find(|(x, _)| *x == c.name) {
                let _ = write!(
                    body,
                    "<p class=\"note\">Not instrumented: it would need {n} coverage counters, \
                     more than a class may have ({}); bci instrument and the agent leave it \
                     without coverage, so it shows as not run.</p>",
                    bci_rewriter::coverage::MAX_COUNTERS
                );
            }
            if let Some((_, why)) = r.uncovered.iter().find(|(x, _)| *x == c.name) {
                let _ = write!(
                    body,
                    "<p class=\"note\">Not instrumented: {}; bci instrument and the agent \
                     leave it without coverage, so it shows as not run.</p>",
                    esc(why)
                );
            }
            if !c.not_analysed.is_empty() {
                // methods the instrumenter left without counters: in no figure of the page
                let _ = write!(
                    body,
                    "<p class=\"note\">Without counters, in no figure here:</p><ul class=\"note\">"
                );
                for (name, desc, why) in &c.not_analysed {
                    let _ = write!(
                        body,
                        "<li>{}: {}</li>",
                        esc(&format!("{name}{desc}")),
                        esc(why)
                    );
                }
                body.push_str("</ul>");
            }
            table(
                &mut body,
                "Method",
                "<th>Entries</th>",
                &rows,
                &c.counters,
                false,
            );
            s.write(
                &pd.join(class_page_name(&c.name)),
                &page(&cname, "../", &crumbs, &body),
            )?;
        }
        for f in &p.files {
            let crumbs = format!(
                "<a href=\"../index.html\">{}</a> &gt; <a href=\"index.html\">{}</a> &gt; {}",
                esc(&r.title),
                esc(&pname),
                esc(&f.name)
            );
            let body = source(r, f, notes);
            s.write(
                &pd.join(source_page_name(&f.name)),
                &page(&f.name, "../", &crumbs, &body),
            )?;
        }
    }
    Ok(())
}

/// The tooltip of a line's branch marker.
pub fn branch_tip(l: &Line) -> String {
    let b = l.branches;
    if b.missed == 0 {
        format!("All {} branches covered", b.total())
    } else if b.covered == 0 {
        format!("All {} branches missed", b.total())
    } else {
        format!("{} of {} branches missed", b.missed, b.total())
    }
}

/// The lines of a source file as Java counts them (JLS 3.4, and so javac's LineNumberTable):
/// ended by `\r\n`, `\n` or a lone `\r` (a file saved with classic Mac line ends); a last
/// line without an end counts, an empty one after the last end does not.
pub fn source_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'\n' => {
                out.push(&text[start..i]);
                i += 1;
                start = i;
            }
            b'\r' => {
                out.push(&text[start..i]);
                i += if b.get(i + 1) == Some(&b'\n') { 2 } else { 1 };
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < b.len() {
        out.push(&text[start..]);
    }
    out
}

fn source(r: &Report, f: &SourceFile<'_>, notes: &mut SourceNotes) -> String {
    let mut o = String::new();
    let text = match r.find_source(&f.path) {
        None => {
            let _ = write!(
                o,
                "<p class=\"note\">Source file {} not found under the --sources roots; lines without text.</p>",
                esc(&f.path)
            );
            None
        }
        Some(p) => match std::fs::read(&p) {
            Ok(bytes) => {
                let (text, note) = super::encoding::decode(&bytes, r.source_encoding);
                match note {
                    Some(super::encoding::Note::ReadAs1252) => {
                        notes.read_as_1252.push(p.display().to_string())
                    }
                    Some(super::encoding::Note::Invalid) => {
                        notes.invalid.push(p.display().to_string())
                    }
                    None => {}
                }
                Some(text)
            }
            Err(e) => {
                let _ = write!(
                    o,
                    "<p class=\"note\">Source file {} cannot be read: {}; lines without text.</p>",
                    esc(&p.display().to_string()),
                    esc(&e.to_string())
                );
                None
            }
        },
    };
    let src: Vec<&str> = text.as_deref().map_or(Vec::new(), source_lines);
    let last = f.lines.keys().next_back().copied().unwrap_or(0) as usize;
    let n = src.len().max(last);
    o.push_str("<table class=\"src\"><tbody>");
    for i in 1..=n {
        let l = f.lines.get(&(i as u32));
        let status = l.map_or(Status::Empty, |l| l.status());
        let class = match status {
            Status::Empty => "",
            Status::NotCovered => "nc",
            Status::PartlyCovered => "pc",
            Status::FullyCovered => "fc",
        };
        let hits = match l {
            Some(l) if l.instructions.total() > 0 => line_count(l).to_string(),
            _ => String::new(),
        };
        let br = match l {
            Some(l) if l.branches.total() > 0 => {
                let k = if l.branches.covered == 0 {
                    "nm"
                } else if l.branches.missed > 0 {
                    "pm"
                } else {
                    "ok"
                };
                format!(
                    "<span class=\"{k}\" title=\"{}\">&#9670;</span>",
                    esc(&branch_tip(l))
                )
            }
            _ => String::new(),
        };
        let code = src.get(i - 1).copied().unwrap_or("");
        // Per-test coverage: the tests that ran the line, in the row's tooltip.
        let tip = match (&r.per_test, status) {
            (Some(pt), s) if s != Status::Empty => {
                let t = pt.tests_of(&f.path, i as u32);
                let outside = pt.ran_outside(&f.path, i as u32);
                let t = match (t.is_empty(), outside) {
                    (true, false) => "Run by no test".to_string(),
                    (true, true) => "Run outside tests only".to_string(),
                    (false, o) => format!(
                        "Run by {} test(s): {}{}",
                        t.len(),
                        t.join(", "),
                        if o { "; and outside tests" } else { "" }
                    ),
                };
                format!(" title=\"{}\"", esc(&t))
            }
            _ => String::new(),
        };
        let _ = write!(
            o,
            "<tr id=\"L{i}\" class=\"{class}\"{tip}><td class=\"nr\">{i}</td><td class=\"hits\">{hits}</td>\
             <td class=\"br\">{br}</td><td class=\"code\">{}</td></tr>",
            esc(code)
        );
    }
    o.push_str("</tbody></table>");
    o
}
